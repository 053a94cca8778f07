// planted
#pragma once

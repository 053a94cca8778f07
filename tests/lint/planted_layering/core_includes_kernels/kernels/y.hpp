#pragma once
#include "core/x.hpp"

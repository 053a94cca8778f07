#pragma once
#include "core/types.hpp"

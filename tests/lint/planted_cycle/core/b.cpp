#include "core/a.hpp"

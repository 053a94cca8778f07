#include "core/b.hpp"

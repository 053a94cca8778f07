// a planted layering violation: kernels/ includes cli/ (the layering lint must fail here)
#include "cli/z.hpp"

// a planted layering violation: kernels/ includes a core header outside its list (the layering lint must fail here)
#include "core/route.hpp"
#include "core/worklist.hpp"

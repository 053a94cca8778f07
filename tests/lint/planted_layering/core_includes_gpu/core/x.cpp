// a planted layering violation: core/ includes a GPU header (the layering lint must fail here)
#include <vector>

#include <cuda_runtime.h>

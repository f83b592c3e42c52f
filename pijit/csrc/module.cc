#include "pijit/csrc/module.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "pijit native core";
  pijit::BindTensor(m);
  pijit::BindComplex(m);
  pijit::BindDLPack(m, m.attr("Tensor"));
  pijit::BindJit(m);
  pijit::BindTape(m);
  pijit::BindPrimitive(m);
  pijit::BindCuda(m);
  pijit::BindComm(m);
  pijit::BindGraphFile(m);
}

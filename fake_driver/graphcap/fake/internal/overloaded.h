// std::visit over the fake's variants of work with one lambda per alternative:
//   std::visit(Overloaded{[](const KernelWork&) {...}, [](const CopyToDeviceWork&) {...}}, work)
#pragma once

namespace graphcap::fake::internal {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace graphcap::fake::internal

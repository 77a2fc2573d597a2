// How to read entry_points.def, the one list of CUDA driver entry points graphcap uses. Each line
// there is
//
//   GRAPHCAP_DRIVER_ENTRY(name, version, versioned, ((type, param), (type, param), ...), traits)
//
// and whoever includes the file defines GRAPHCAP_DRIVER_ENTRY to turn one line into what it needs
// (a pure virtual, a function pointer, a forwarder, ...); the file #undefs it at its end. These
// helpers turn a line's parameter list into the shapes the definitions need:
//
//   GRAPHCAP_PARAMS(((CUstream, stream), (int, n)))          ->  CUstream stream, int n
//   GRAPHCAP_ARGS(((CUstream, stream), (int, n)))            ->  stream, n
//   GRAPHCAP_PARAM_TYPES(((CUstream, stream), (int, n)))     ->  CUstream, int
//   GRAPHCAP_TRAILING_ARGS(((CUstream, stream), (int, n)))   ->  , stream, n
//
// The last is for a call that passes something first: f(tag GRAPHCAP_TRAILING_ARGS(params)). An
// empty list, (), gives nothing in all four. At most 12 parameters.
//
// A line's traits, (stream, order, capture, host, (handle, kind, handle_param), (codes...)), are
// read one by one (entry_points.def says what each means; entry_traits.h makes them values):
//
//   GRAPHCAP_TRAIT_STREAM(traits)        ->  stream (a parameter) or nullptr
//   GRAPHCAP_TRAIT_ORDER(traits)         ->  ordered | unordered
//   GRAPHCAP_TRAIT_CAPTURE(traits)       ->  none | begins | ends | unsafe
//   GRAPHCAP_TRAIT_HOST(traits)          ->  none | waits | queries
//   GRAPHCAP_TRAIT_HANDLE(traits)        ->  none | creates | releases
//   GRAPHCAP_TRAIT_HANDLE_KIND(traits)   ->  none | streams | events | ... (fake::LiveHandles' fields)
//   GRAPHCAP_TRAIT_HANDLE_PARAM(traits)  ->  the parameter that holds the handle, or 0
//   GRAPHCAP_TRAIT_CODES(traits)         ->  CUDA_ERROR_..., CUDA_ERROR_...
//
// A caution for translation units that include cuda.h first (nvcc ones, cuda_types_check.cc):
// cuda.h #defines many plain names as their versioned exports (cuMemAlloc -> cuMemAlloc_v2). A
// `name` that reaches the output as an identifier is renamed by that macro, consistently
// everywhere, which is harmless; `#name` and `name##...` in the definition itself see the plain
// name. Passing `name` on to a helper macro first would expand it before the # or ## there.
#pragma once

#define GRAPHCAP_PARAMS(params) GRAPHCAP_PP_EACH(GRAPHCAP_PP_PARAM, params)
#define GRAPHCAP_ARGS(params) GRAPHCAP_PP_EACH(GRAPHCAP_PP_ARG, params)
#define GRAPHCAP_PARAM_TYPES(params) GRAPHCAP_PP_EACH(GRAPHCAP_PP_TYPE, params)
#define GRAPHCAP_TRAILING_ARGS(params) GRAPHCAP_PP_TRAILING(GRAPHCAP_ARGS(params))

#define GRAPHCAP_TRAIT_STREAM(traits) GRAPHCAP_PP_ARG0 traits
#define GRAPHCAP_TRAIT_ORDER(traits) GRAPHCAP_PP_ARG1 traits
#define GRAPHCAP_TRAIT_CAPTURE(traits) GRAPHCAP_PP_ARG2 traits
#define GRAPHCAP_TRAIT_HOST(traits) GRAPHCAP_PP_ARG3 traits
#define GRAPHCAP_TRAIT_HANDLE(traits) GRAPHCAP_PP_APPLY(GRAPHCAP_PP_ARG0, GRAPHCAP_PP_ARG4 traits)
#define GRAPHCAP_TRAIT_HANDLE_KIND(traits) GRAPHCAP_PP_APPLY(GRAPHCAP_PP_ARG1, GRAPHCAP_PP_ARG4 traits)
#define GRAPHCAP_TRAIT_HANDLE_PARAM(traits) \
  GRAPHCAP_PP_APPLY(GRAPHCAP_PP_ARG2, GRAPHCAP_PP_ARG4 traits)
#define GRAPHCAP_TRAIT_CODES(traits) GRAPHCAP_PP_APPLY(GRAPHCAP_PP_UNPAREN, GRAPHCAP_PP_ARG5 traits)

// The nth element of a parenthesized group; `m args` once `args` is expanded.
#define GRAPHCAP_PP_ARG0(a, ...) a
#define GRAPHCAP_PP_ARG1(a, b, ...) b
#define GRAPHCAP_PP_ARG2(a, b, c, ...) c
#define GRAPHCAP_PP_ARG3(a, b, c, d, ...) d
#define GRAPHCAP_PP_ARG4(a, b, c, d, e, ...) e
#define GRAPHCAP_PP_ARG5(a, b, c, d, e, f, ...) f
#define GRAPHCAP_PP_APPLY(m, args) m args
// #x once x is expanded.
#define GRAPHCAP_PP_STRINGIZE(x) GRAPHCAP_PP_STRINGIZE_(x)
#define GRAPHCAP_PP_STRINGIZE_(x) #x

#define GRAPHCAP_PP_PARAM(type, name) type name
#define GRAPHCAP_PP_ARG(type, name) name
#define GRAPHCAP_PP_TYPE(type, name) type

// A comma before the arguments, if there are any. One step more, so that __VA_OPT__ looks at the
// arguments once expanded (GRAPHCAP_ARGS(()) is no tokens, but not until it is expanded).
#define GRAPHCAP_PP_TRAILING(...) GRAPHCAP_PP_TRAILING_(__VA_ARGS__)
#define GRAPHCAP_PP_TRAILING_(...) __VA_OPT__(, ) __VA_ARGS__

// GRAPHCAP_PP_EACH(f, ((a, b), (c, d))) -> f(a, b), f(c, d): each element is parenthesized, so
// `f element` is a call of f. By count: the number of elements picks GRAPHCAP_PP_EACH_<n>.
#define GRAPHCAP_PP_EACH(f, list) \
  GRAPHCAP_PP_EACH_N(GRAPHCAP_PP_COUNT list, f, GRAPHCAP_PP_UNPAREN list)
// One more step, so the elements are separate arguments by the time GRAPHCAP_PP_EACH_<n> sees them.
#define GRAPHCAP_PP_EACH_N(n, f, ...) GRAPHCAP_PP_CAT(GRAPHCAP_PP_EACH_, n)(f, __VA_ARGS__)
#define GRAPHCAP_PP_UNPAREN(...) __VA_ARGS__
#define GRAPHCAP_PP_CAT(a, b) GRAPHCAP_PP_CAT_(a, b)
#define GRAPHCAP_PP_CAT_(a, b) a##b

// The number of arguments, 0 to 12 (C++20's __VA_OPT__ tells none from one).
#define GRAPHCAP_PP_COUNT(...) \
  GRAPHCAP_PP_COUNT_(__VA_OPT__(__VA_ARGS__, ) 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define GRAPHCAP_PP_COUNT_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, n, ...) n

#define GRAPHCAP_PP_EACH_0(f, ...)
#define GRAPHCAP_PP_EACH_1(f, e) f e
#define GRAPHCAP_PP_EACH_2(f, e, ...) f e, GRAPHCAP_PP_EACH_1(f, __VA_ARGS__)
#define GRAPHCAP_PP_EACH_3(f, e, ...) f e, GRAPHCAP_PP_EACH_2(f, __VA_ARGS__)
#define GRAPHCAP_PP_EACH_4(f, e, ...) f e, GRAPHCAP_PP_EACH_3(f, __VA_ARGS__)
#define GRAPHCAP_PP_EACH_5(f, e, ...) f e, GRAPHCAP_PP_EACH_4(f, __VA_ARGS__)
#define GRAPHCAP_PP_EACH_6(f, e, ...) f e, GRAPHCAP_PP_EACH_5(f, __VA_ARGS__)
#define GRAPHCAP_PP_EACH_7(f, e, ...) f e, GRAPHCAP_PP_EACH_6(f, __VA_ARGS__)
#define GRAPHCAP_PP_EACH_8(f, e, ...) f e, GRAPHCAP_PP_EACH_7(f, __VA_ARGS__)
#define GRAPHCAP_PP_EACH_9(f, e, ...) f e, GRAPHCAP_PP_EACH_8(f, __VA_ARGS__)
#define GRAPHCAP_PP_EACH_10(f, e, ...) f e, GRAPHCAP_PP_EACH_9(f, __VA_ARGS__)
#define GRAPHCAP_PP_EACH_11(f, e, ...) f e, GRAPHCAP_PP_EACH_10(f, __VA_ARGS__)
#define GRAPHCAP_PP_EACH_12(f, e, ...) f e, GRAPHCAP_PP_EACH_11(f, __VA_ARGS__)

// Part of the Lambda program (not of the dlq library): fmt's compiled part,
// built into the program so that it does not load libfmt.so (Debian ships
// fmt as a shared library only, and every shared library the loader maps and
// relocates costs the cold start; bench/lambda/README.md).
//
// Including format-inl.h without FMT_HEADER_ONLY defines fmt's non-template
// functions out of line, here; the templates that fmt's headers declare but
// leave to the library are instantiated below for what the program uses
// (the link fails if one is missing, so this list cannot silently go stale).
#include <fmt/format-inl.h>

#include <locale>

namespace fmt {
inline namespace v9 {
namespace detail {

template struct dragonbox::decimal_fp<float>;
template auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template locale_ref::locale_ref(const std::locale& loc);
template auto locale_ref::get<std::locale>() const -> std::locale;
template auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template auto decimal_point_impl(locale_ref) -> char;

}  // namespace detail
}  // namespace v9
}  // namespace fmt

#!/usr/bin/env bash
# The README's prerequisites are what the two commands need (CI runs this after the fake
# workflow; quick: dpkg queries only). Checks, on a Debian-based machine:
#  1. every package of the README's apt-get line is installed (dpkg -s);
#  2. what the fake preset's configure used belongs to a package of that line, or to one they
#     depend on: its build program (Ninja), its compiler, and every CMake package config it found
#     (<Name>_DIR in build/fake/CMakeCache.txt), so a package the commands need but the README
#     leaves out fails here (optional finds, QUIET and not config packages, are not counted).
# Where dpkg is missing (not a Debian image) it says so and checks nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v dpkg > /dev/null; then
  echo "check_prerequisites: no dpkg here: not checked"
  exit 0
fi
line=$(grep -m1 -E '^sudo apt-get install ' README.md || true)
if [[ -z "$line" ]]; then
  echo "check_prerequisites: README.md has no 'sudo apt-get install' line" >&2
  exit 1
fi
read -r -a listed <<< "$(sed -E 's/^sudo apt-get install //' <<< "$line" | tr ' ' '\n' |
                         grep -v -e '^-' -e '^$' | tr '\n' ' ')"
failed=0
for package in "${listed[@]}"; do
  if ! dpkg -s "$package" > /dev/null 2>&1; then
    echo "check_prerequisites: the README lists $package, which is not installed" >&2
    failed=1
  fi
done

# The packages the listed ones depend on directly (a compiler's versioned package, g++-12 of g++).
depends=$(for package in "${listed[@]}"; do
            dpkg-query -W -f='${Depends}\n' "$package" 2> /dev/null || true
          done | tr ',|' '\n\n' | sed -E 's/^ *([^ :]+).*/\1/' | sort -u)
covered() {  # is package $1 listed, or a direct dependency of one listed?
  local package=$1
  printf '%s\n' "${listed[@]}" | grep -qx "$package" && return 0
  grep -qx "$package" <<< "$depends"
}
check_path() {  # what: $1, a path the configure used: $2
  local owner
  owner=$(dpkg -S "$(realpath "$2")" 2> /dev/null | head -1 | sed -E 's/:.*//; s/, .*//') || true
  owner=${owner%%:*}
  if [[ -z "$owner" ]]; then
    echo "check_prerequisites: $1 ($2) is in no Debian package: not checked"
  elif covered "$owner"; then
    echo "check_prerequisites: $1: $owner (the apt-get line installs it)"
  else
    echo "check_prerequisites: $1 ($2) is from $owner, which the README's apt-get line does not" \
         "install" >&2
    failed=1
  fi
}

cache=build/fake/CMakeCache.txt
if [[ -f "$cache" ]]; then
  check_path "the build program" "$(sed -n 's/^CMAKE_MAKE_PROGRAM:FILEPATH=//p' "$cache")"
  check_path "the C++ compiler" "$(sed -n 's/^CMAKE_CXX_COMPILER:FILEPATH=//p' "$cache")"
  while IFS='=' read -r entry dir; do
    name=${entry%%_DIR:PATH}
    [[ "$dir" == */cmake/* || "$dir" == */cmake ]] || continue  # a package config's directory
    check_path "find_package($name)" "$dir"
  done < <(grep -E '^[A-Za-z0-9]+_DIR:PATH=/' "$cache")
else
  echo "check_prerequisites: no $cache (configure the fake preset first): only the list checked"
fi

if [[ "$failed" != 0 ]]; then exit 1; fi
echo "check_prerequisites: the README's apt-get line is installed and covers the fake preset"

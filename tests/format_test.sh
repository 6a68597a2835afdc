#!/usr/bin/env bash
# Every C++ and CUDA source of the tree is formatted as .clang-format says. Formatters of
# different major versions disagree on details, so the check runs with the one
# deploy/install-deps.sh installs (Debian 12's clang-format 14) and is skipped, saying so,
# with any other. To format: clang-format -i FILE (tests/format_test.sh --fix does all).
#
# usage: tests/format_test.sh SOURCE_DIR
#        tests/format_test.sh --fix SOURCE_DIR
#        tests/format_test.sh --self-test
set -euo pipefail
readonly kMajor=14
readonly kSkip=77

formatter_or_skip() {
  if ! command -v clang-format >/dev/null; then
    echo "format_test: skipped: clang-format is not installed (deploy/install-deps.sh installs it)"
    exit $kSkip
  fi
  local version
  version=$(clang-format --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
  if [[ $version != "$kMajor" ]]; then
    echo "format_test: skipped: clang-format $version here; the tree is formatted with $kMajor"
    exit $kSkip
  fi
}

# The sources under ROOT: git's list in a checkout, else every file by name (a tarball).
sources() {
  local root=$1
  if git -C "$root" rev-parse --show-toplevel >/dev/null 2>&1 &&
     [[ $(git -C "$root" rev-parse --show-toplevel) == "$(cd "$root" && pwd -P)" ]]; then
    git -C "$root" ls-files -- '*.cc' '*.h' '*.cu' | sed "s|^|$root/|"
  else
    find "$root" \( -path "$root/build*" -o -path "$root/.git" \) -prune -o \
      \( -name '*.cc' -o -name '*.h' -o -name '*.cu' \) -type f -print
  fi
}

# Prints each file under ROOT that clang-format would change; fails if there is one.
check_tree() {
  local root=$1 found=0 file
  while IFS= read -r file; do
    [[ -f $file ]] || continue  # deleted in the work tree, not yet in git's index
    if ! clang-format --dry-run --Werror --style=file "$file" >/dev/null 2>&1; then
      echo "$file"
      found=1
    fi
  done < <(sources "$root" | sort)
  return $found
}

case ${1:-} in
  --self-test)
    formatter_or_skip
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
    printf 'BasedOnStyle: Google\nColumnLimit: 100\n' >"$dir/.clang-format"
    printf 'int Good() { return 1; }\n' >"$dir/good.cc"
    check_tree "$dir" >/dev/null || { echo "format_test: a formatted file was refused" >&2; exit 1; }
    printf 'int   Bad( ){return 1;}\n' >"$dir/bad.h"
    if [[ $(check_tree "$dir") != "$dir/bad.h" ]]; then
      echo "format_test: an unformatted file was not caught" >&2
      exit 1
    fi
    echo "format_test self-test: ok"
    ;;
  --fix)
    formatter_or_skip
    root=${2:?usage: format_test.sh --fix SOURCE_DIR}
    sources "$root" | xargs clang-format -i --style=file
    ;;
  *)
    formatter_or_skip
    root=${1:?usage: format_test.sh SOURCE_DIR}
    if ! check_tree "$root"; then
      echo "format_test: the files above differ from what clang-format $kMajor makes of them with" >&2
      echo ".clang-format: run tests/format_test.sh --fix $root" >&2
      exit 1
    fi
    echo "format_test: every source is formatted"
    ;;
esac

#!/usr/bin/env bash
# Installs the given Debian 12 packages that are missing (apt-get, with sudo
# when not root); `nodejs` and `npm` count as present when their commands are.
# tools/setup.sh installs what the build needs, tools/sanitize.sh adds clang.
#   bash tools/install_packages.sh cmake ninja-build ...
set -euo pipefail
missing=()
for p in "$@"; do
  case "$p" in
    nodejs) command -v node >/dev/null 2>&1 || missing+=("$p") ;;
    npm) command -v npm >/dev/null 2>&1 || missing+=("$p") ;;
    *) dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p") ;;
  esac
done
((${#missing[@]})) || exit 0
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
echo "installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

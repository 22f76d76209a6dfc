# Shared by the build scripts (sourced, not run): step headings and installing the Debian
# packages a build needs when they are missing.

step() { printf '\n==> %s\n' "$*"; }

# ensure_packages PKG...: installs the packages dpkg does not know yet (with sudo when not
# root), refreshing the package lists once if the first attempt fails.
ensure_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
    done
    [[ ${#missing[@]} -eq 0 ]] && return 0
    local sudo=()
    [[ $(id -u) -ne 0 ]] && sudo=(sudo)
    step "installing ${missing[*]}"
    if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"; then
        "${sudo[@]}" apt-get update
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
    fi
}

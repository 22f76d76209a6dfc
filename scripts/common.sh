# Shared by the project's scripts (sourced, not run): step headings, failing with a clear
# message, and the one way packages are installed (Debian's apt, with one sudo policy).

step() { printf '\n==> %s\n' "$*"; }

# die MESSAGE...: the message on stderr, prefixed with the script's name, and exit 1.
die() {
    printf '%s: error: %s\n' "$(basename "${BASH_SOURCE[-1]:-$0}")" "$*" >&2
    exit 1
}

# ensure_packages PKG...: installs the Debian packages dpkg does not know yet, in one apt-get
# call (instant when all are installed). As root directly; otherwise through `sudo -n` when
# sudo needs no password; otherwise it stops and prints the command to run. The package lists
# are refreshed once when the first attempt fails.
ensure_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
    done
    [[ ${#missing[@]} -eq 0 ]] && return 0
    local sudo=()
    if [[ $(id -u) -ne 0 ]]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            sudo=(sudo -n)
        else
            die "missing Debian packages: ${missing[*]}; install them as root: apt-get install -y --no-install-recommends ${missing[*]}"
        fi
    fi
    step "installing ${missing[*]}"
    local apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y --no-install-recommends install)
    if ! "${apt[@]}" "${missing[@]}" </dev/null; then
        "${sudo[@]}" apt-get -q update </dev/null
        "${apt[@]}" "${missing[@]}" </dev/null || die "apt-get could not install ${missing[*]}"
    fi
}

# version_at_least HAVE WANT: true when dotted version HAVE >= WANT.
version_at_least() {
    [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" == "$2" ]]
}

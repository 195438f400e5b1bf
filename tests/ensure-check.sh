#!/bin/sh
# Make sure the `check` unit-test library (and pkg-config, which finds it) is
# installed; install both with the system's package manager when they are not.
if pkg-config --exists check 2>/dev/null; then
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    fi
fi

needs_root=yes
if command -v apt-get >/dev/null 2>&1; then
    install="${SUDO:+$SUDO }apt-get update && ${SUDO:+$SUDO }env DEBIAN_FRONTEND=noninteractive apt-get install -y check pkg-config"
elif command -v dnf >/dev/null 2>&1; then
    install="${SUDO:+$SUDO }dnf install -y check-devel pkgconf-pkg-config"
elif command -v pacman >/dev/null 2>&1; then
    install="${SUDO:+$SUDO }pacman -S --noconfirm --needed check pkgconf"
elif command -v apk >/dev/null 2>&1; then
    install="${SUDO:+$SUDO }apk add check-dev pkgconf"
elif command -v brew >/dev/null 2>&1; then
    install="brew install check pkg-config"
    needs_root=no   # Homebrew installs as the user
else
    echo "make test needs the 'check' unit-test library and pkg-config, and no known package"
    echo "manager was found. Install them (https://libcheck.github.io/check/), then run make test."
    exit 1
fi

if [ "$(id -u)" -ne 0 ] && [ -z "$SUDO" ] && [ "$needs_root" = yes ]; then
    echo "make test needs the 'check' unit-test library; install it as root with:"
    echo "    $install"
    exit 1
fi

echo "make test: the 'check' unit-test library is missing; installing it with:"
echo "    $install"
sh -c "$install" || {
    echo "installing check failed; run this yourself, then make test again:"
    echo "    $install"
    exit 1
}
pkg-config --exists check || { echo "check is still not found by pkg-config"; exit 1; }

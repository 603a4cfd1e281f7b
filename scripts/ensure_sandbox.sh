#!/usr/bin/env bash
# Install bubblewrap (the tools sandbox) when it is missing and we may use apt.
# Never fails: without it `trajforge demo` runs with the code tools off and says so.
set -uo pipefail

command -v bwrap >/dev/null 2>&1 && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian package: bubblewrap"
  # apt may report success and still leave no bwrap (a package marked installed whose binary is gone).
  if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null \
      && command -v bwrap >/dev/null 2>&1; then
    exit 0
  fi
  echo "could not install bubblewrap; continuing without the sandbox"
else
  echo "bubblewrap is missing and cannot be installed here (needs root and apt-get); continuing without the sandbox"
fi
exit 0

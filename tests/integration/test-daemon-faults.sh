# SPDX-License-Identifier: GPL-2.0-only
. "$(dirname "$0")/daemon-lib.sh"
finish

// The lock wrappers moved to the public headers (poolfs/mutex.h), so that
// the daemon, which sees only those, annotates its locks too. This header
// stays for the core's includes.
#pragma once

#include "poolfs/mutex.h"

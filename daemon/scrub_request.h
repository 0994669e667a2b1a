// `poolfs scrub` apart from its command line: the request the client sends
// the pool's daemon through its control socket ("scrub start", "scrub
// stop"), what the daemon does with it (Filesystem::StartScrub and
// StopScrub; the reply is EncodeStatus's, dataset_request.h), and the
// lines `poolfs status` shows of the pool's scrub, as `zpool status`
// shows its "scan:" line and, with errors, the files they hit.
//
// Thread safety: functions of their arguments; HandleScrubRequest calls
// `fs`, which may be called from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "poolfs/fs.h"
#include "poolfs/status.h"

namespace poolfs::daemon {

enum class ScrubAction { kStart, kStop };

// The control request for `a`: "scrub start" or "scrub stop".
std::string EncodeScrubRequest(ScrubAction a);
// What follows "scrub " in a request: InvalidArgument for anything but
// "start" or "stop".
Result<ScrubAction> DecodeScrubRequest(std::string_view args);
// The daemon's side: decodes `args` and starts or stops the scrub of
// `fs`'s pool; the reply is EncodeStatus's (AlreadyExists when one runs
// already, NotFound when none runs to stop, ReadOnly on a read-only
// mount).
std::string HandleScrubRequest(poolfs::Filesystem& fs, std::string_view args);

// The lines of `poolfs status` about the scrub:
//   scan:    no scrub has run
//   scan:    scrub in progress since <time>: 1.20GiB of 3.40GiB examined at
//            45.0MiB/s, 35% done, 0 repaired, 0 errors
//   scan:    scrub repaired 2 copies in 00:00:12 with 1 error on <time>
//   scan:    scrub stopped on <time> after 00:00:05: ...
// and, when it found blocks none of whose copies verifies, "errors:" with
// the files they hit, one a line ("tank/ds:/dir/file").
std::string RenderScrubStatus(const poolfs::ScrubStatus& s);

// "00:00:12", "27:46:40": hours, minutes and seconds of `seconds`.
std::string FormatElapsed(int64_t seconds);
// "Mon Jan  6 12:00:00 2025": `t` (seconds since the epoch) in local time.
std::string FormatLocalTime(int64_t t);

}  // namespace poolfs::daemon

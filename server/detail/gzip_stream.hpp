#pragma once
// A streamed response body compressed as it goes (gzip, RFC 1952), for the content types httplib
// leaves uncompressed (application/x-ndjson): a 100,000-point job's result rows are tens of
// megabytes of JSON that compress about tenfold.
//
// Threading: the stream it returns is called by one thread at a time, as any response stream.

#include <functional>
#include <string>

namespace kernelscan::detail {

using body_stream = std::function<bool(std::string& chunk)>;

// `inner` compressed at zlib level `level` (1 fastest .. 9 smallest): each call appends what the
// compressor gave out for the inner stream's next chunks (it may hold a few before it gives any)
// and returns true, then false once the inner stream ended and the gzip trailer went out. An
// exception of the inner stream passes through (the response then ends unfinished, the
// compressed body cut off, as an uncompressed one would be).
body_stream gzip_stream(body_stream inner, int level = 6);

}  // namespace kernelscan::detail

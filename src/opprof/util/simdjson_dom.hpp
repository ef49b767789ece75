#pragma once
// simdjson, for the places that load a small JSON file whole into its DOM (capture records). GCC 12 reports
// a false -Wdangling-pointer inside simdjson's DOM parser once it is inlined: silenced here, in one place.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#include <simdjson.h>
#pragma GCC diagnostic pop

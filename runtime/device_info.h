// What tilejit needs to know about a GPU: identity (for tuning keys), compute capability (for
// the compile target) and the limits that decide which kernel configurations can run. The
// struct is public (<tilejit/device_info.h>); this header is the runtime's way in.
#pragma once

#include <tilejit/device_info.h>

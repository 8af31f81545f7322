#ifndef CAVAHI_SHIM_H
#define CAVAHI_SHIM_H

#include <avahi-client/client.h>
#include <avahi-client/publish.h>
#include <avahi-common/alternative.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/thread-watch.h>

/// avahi_entry_group_add_service is variadic (its TXT records); Zeroconf uses the non-variadic
/// avahi_entry_group_add_service_strlst with no TXT records.

#endif

#ifndef CLIBLO_SHIM_H
#define CLIBLO_SHIM_H

#include <lo/lo.h>

/// liblo's lo_send and lo_message_add are variadic; the OSC layer builds messages with the typed
/// lo_message_add_* functions and sends them with lo_send_message, which are not.

#endif

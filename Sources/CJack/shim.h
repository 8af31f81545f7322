#ifndef CJACK_SHIM_H
#define CJACK_SHIM_H

#include <jack/jack.h>
#include <jack/types.h>
#include <jack/metadata.h>
#include <jack/ringbuffer.h>
#include <jack/intclient.h>
#include <sched.h>

/// jack_client_open is variadic (the server name travels as a trailing vararg), which Swift cannot
/// call. This wrapper adds JackServerName when a server name is given and never starts a server.
static inline jack_client_t *CJackShims_client_open(const char *client_name,
                                                    const char *server_name,
                                                    jack_status_t *status) {
    jack_options_t options = JackNoStartServer;
    if (server_name != 0 && server_name[0] != '\0') {
        options = (jack_options_t)(options | JackServerName);
        return jack_client_open(client_name, options, status, server_name);
    }
    return jack_client_open(client_name, options, status);
}

/// jack_internal_client_load is variadic too: loads `so_name` (a server plug-in such as netjack2's
/// netmanager) into the server as an internal client named exactly `name`, with `init` as its
/// arguments. 0 when it could not (`status` says why).
static inline jack_intclient_t CJackShims_internal_client_load(jack_client_t *client, const char *name, const char *so_name,
                                                               const char *init, jack_status_t *status) {
    jack_options_t options = (jack_options_t)(JackLoadName | JackLoadInit | JackUseExactName);
    return jack_internal_client_load(client, name, options, status, so_name, init);
}

/// The default audio port type string, exported by libjack as a macro.
static inline const char *CJackShims_default_audio_type(void) {
    return JACK_DEFAULT_AUDIO_TYPE;
}

/// The metadata key for a port's pretty name (an exported global, which Swift 6 will not read
/// directly because it is mutable C state).
static inline const char *CJackShims_pretty_name_key(void) {
    return JACK_METADATA_PRETTY_NAME;
}

/// Whether the calling thread runs under a real-time policy (SCHED_FIFO or SCHED_RR): JACK's
/// process thread does. One system call; no lock, no allocation.
static inline int CJackShims_on_realtime_thread(void) {
    int policy = sched_getscheduler(0);
    return policy == SCHED_FIFO || policy == SCHED_RR;
}

/// glibc's dladdr and its Dl_info, declared here: <dlfcn.h> gives them only under _GNU_SOURCE,
/// which would make this module's system types differ from Swift's Glibc module.
typedef struct {
    const char *dli_fname;
    void *dli_fbase;
    const char *dli_sname;
    void *dli_saddr;
} CJackShims_DlInfo;
extern int dladdr(const void *address, CJackShims_DlInfo *info);

/// What the loaded libjack says it is (`jack_get_version_string`, optional in the API), or NULL:
/// PipeWire's says "3.0.0.0 (using PipeWire 0.3.65)", JACK2's its version ("1.9.21"). Looked up
/// at run time (dlsym with glibc's RTLD_DEFAULT, 0), so a libjack without it still loads: jack.h's
/// JACK_OPTIONAL_WEAK_EXPORT is empty unless weakjack.h is used, and a weak redeclaration here
/// does not reach Swift's code generation (the binary still needed the symbol).
extern void *dlsym(void *handle, const char *symbol);
static inline const char *CJackShims_version_string(void) {
    const char *(*get)(void) = (const char *(*)(void))dlsym((void *)0, "jack_get_version_string");
    return get ? get() : NULL;
}

/// The file the loaded libjack came from (PipeWire's lives under .../pipewire-0.3/jack/), or NULL.
static inline const char *CJackShims_library_path(void) {
    CJackShims_DlInfo info;
    if (dladdr((const void *)&jack_client_open, &info) == 0) return NULL;
    return info.dli_fname;
}

/// Calls libjack's current error callback, as libjack does (for tests).
static inline void CJackShims_call_error_callback(const char *message) {
    if (jack_error_callback) jack_error_callback(message);
}

#endif

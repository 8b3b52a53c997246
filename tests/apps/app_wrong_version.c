/* app_wrong_version.c — a module claiming another API version, which
 * spindle must refuse with a clear message. */
#include "spindle.h"

SP_API extern const int sp_app_api_version;
SP_API const int sp_app_api_version = SPINDLE_API_VERSION + 1;
SP_API int sp_app_init(sp_server *s);
int sp_app_init(sp_server *s) {
    return 0;
}

/* util/names.c: checks of names that leave hetplan in other programs'
 * syntax (host names in hostfiles and launch lines). */
#include <string.h>

#include "util.h"

int util_hostname_ok(const char *s)
{
    size_t len, label = 0, i;

    if (s == NULL)
        return 0;
    len = strlen(s);
    if (len == 0 || len > 253)
        return 0;
    for (i = 0; i <= len; i++) {
        char ch = s[i];
        if (ch == '.' || ch == '\0') {
            /* a label: 1..63 characters, no '-' at either end */
            if (label == 0 || label > 63 || s[i - 1] == '-' ||
                s[i - label] == '-')
                return 0;
            label = 0;
        } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                   (ch >= '0' && ch <= '9') || ch == '-') {
            label++;
        } else {
            return 0;
        }
    }
    return 1;
}

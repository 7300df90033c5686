/* util/names.c: checks of names that leave hetplan in other programs'
 * syntax (host names in hostfiles and launch lines), and the edit
 * distance behind "did you mean" suggestions. */
#include <ctype.h>
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

int util_edit_distance(const char *a, const char *b)
{
    int d[33][33], i, j, la = (int)strlen(a), lb = (int)strlen(b);

    if (la > 32 || lb > 32)
        return 9;
    for (i = 0; i <= la; i++)
        d[i][0] = i;
    for (j = 0; j <= lb; j++)
        d[0][j] = j;
    for (i = 1; i <= la; i++)
        for (j = 1; j <= lb; j++) {
            int x = tolower((unsigned char)a[i - 1]), y = tolower((unsigned char)b[j - 1]);
            int best = d[i - 1][j - 1] + (x != y);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && x == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == y && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[la][lb] < 9 ? d[la][lb] : 9;
}

int util_near_name(const char *name, const char *cand)
{
    int d = util_edit_distance(name, cand);

    return d <= ((int)strlen(cand) + 2) / 3;
}

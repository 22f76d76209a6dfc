/*
 * wordcount: an OpenWhisk action in plain C (WASI command module or native binary).
 *
 * Reads the parameters as the JSON text of argv[1] (or all of stdin when argv[1] is absent),
 * finds the top-level "text" string with a tiny hand-written scanner (no JSON library),
 * writes log lines on stderr and prints the result as the last stdout line:
 *   {"words": n, "chars": m}
 * chars counts Unicode code points of the decoded string; words are runs of non-whitespace.
 * A missing or non-string "text" is an application error: {"error": "..."}.
 *
 * Build: clang-19 --target=wasm32-wasi --sysroot=/usr -O2 -o wordcount.wasm wordcount.c
 *        cc -static -O2 -o wordcount wordcount.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* All of stdin, NUL-terminated; NULL on allocation failure. */
static char *read_stdin(void) {
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    for (;;) {
        if (len + 1 >= cap) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) { free(buf); return NULL; }
            buf = bigger;
            cap *= 2;
        }
        size_t n = fread(buf + len, 1, cap - len - 1, stdin);
        if (n == 0) break;
        len += n;
    }
    buf[len] = '\0';
    return buf;
}

static int is_space(int c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static const char *skip_space(const char *p) {
    while (*p && is_space((unsigned char)*p)) p++;
    return p;
}

/* p points just after an opening quote; returns the position after the closing quote. */
static const char *skip_string(const char *p) {
    while (*p && *p != '"') {
        if (*p == '\\' && p[1]) p++;
        p++;
    }
    return *p == '"' ? p + 1 : p;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/*
 * Counts the string value starting just after its opening quote.
 * Returns 0 on success, -1 if the string is not terminated.
 */
static int count_string(const char *p, long *words, long *chars) {
    int in_word = 0;
    *words = 0;
    *chars = 0;
    while (*p && *p != '"') {
        unsigned char c = (unsigned char)*p;
        int space = 0;
        if (c == '\\') {
            p++;
            switch (*p) {
            case 'n': case 't': case 'r': case 'f': case 'b': space = (*p != 'b'); break;
            case 'u': {
                int v = 0, ok = 1;
                for (int i = 1; i <= 4; i++) {
                    int h = hexval((unsigned char)p[i]);
                    if (h < 0) { ok = 0; break; }
                    v = v * 16 + h;
                }
                if (ok) {
                    p += 4;
                    space = (v == 0x20 || (v >= 0x09 && v <= 0x0d));
                    /* a low surrogate continues the code point of the high one before it */
                    if (v >= 0xDC00 && v <= 0xDFFF) (*chars)--;
                }
                break;
            }
            case '\0': return -1;
            default: break; /* \" \\ \/ */
            }
            p++;
            (*chars)++;
        } else {
            space = is_space(c);
            /* count code points: every byte that is not a UTF-8 continuation byte */
            if ((c & 0xC0) != 0x80) (*chars)++;
            p++;
        }
        if (space) {
            in_word = 0;
        } else if (!in_word) {
            in_word = 1;
            (*words)++;
        }
    }
    return *p == '"' ? 0 : -1;
}

/*
 * Finds the value of the top-level key "text". Returns a pointer to the character after
 * the value's opening quote, or NULL (*why says why).
 */
static const char *find_text(const char *json, const char **why) {
    int depth = 0;
    const char *p = json;
    *why = "missing \"text\" parameter";
    while (*p) {
        char c = *p;
        if (c == '{' || c == '[') { depth++; p++; continue; }
        if (c == '}' || c == ']') { depth--; p++; continue; }
        if (c != '"') { p++; continue; }
        const char *start = p + 1;
        const char *end = skip_string(start);
        const char *after = skip_space(end);
        if (depth == 1 && *after == ':' && end - start == 5 && strncmp(start, "text\"", 5) == 0) {
            const char *value = skip_space(after + 1);
            if (*value == '"') return value + 1;
            *why = "parameter \"text\" must be a string";
            return NULL;
        }
        p = end;
    }
    return NULL;
}

/* Prints {"error": msg} as the result line, escaping quotes and backslashes. */
static void print_error(const char *msg) {
    fputs("{\"error\": \"", stdout);
    for (const char *p = msg; *p; p++) {
        if (*p == '"' || *p == '\\') putchar('\\');
        putchar(*p);
    }
    fputs("\"}\n", stdout);
}

int main(int argc, char **argv) {
    char *owned = NULL;
    const char *params = argc > 1 ? argv[1] : (owned = read_stdin());
    if (!params) {
        print_error("cannot read parameters");
        return 0;
    }
    fprintf(stderr, "wordcount: scanning %zu bytes of parameters\n", strlen(params));

    const char *why = NULL;
    const char *text = find_text(params, &why);
    long words = 0, chars = 0;
    if (!text) {
        fprintf(stderr, "wordcount: %s\n", why);
        print_error(why);
    } else if (count_string(text, &words, &chars) != 0) {
        fprintf(stderr, "wordcount: unterminated string\n");
        print_error("invalid parameters: unterminated \"text\" string");
    } else {
        fprintf(stderr, "wordcount: %ld words, %ld chars\n", words, chars);
        printf("{\"words\": %ld, \"chars\": %ld}\n", words, chars);
    }
    fflush(stdout);
    free(owned);
    return 0;
}

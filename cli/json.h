/* SPDX-License-Identifier: MIT */
/*
 * json.h - JSON strings, for the sender's --json object and the receiver's
 * grading ledger.  Not part of the lab: nothing here touches RDMA.
 */
#ifndef LAB3_JSON_H
#define LAB3_JSON_H

#include <stddef.h>

/* Write S as a JSON string, quotes included, and a NUL into OUT of SIZE
 * bytes: '"' and '\' are escaped with '\', control characters and DEL as
 * \u00XX, valid UTF-8 is kept as it is, and a byte that is not part of
 * valid UTF-8 (a path may hold one) becomes \ufffd, so the result is valid
 * JSON whatever S holds; a NULL S is written as null.  Returns the length
 * of the whole result, like snprintf(): a return value of SIZE or more
 * means OUT was too small (and holds only the start of it). */
size_t lab3_json_string(const char *s, char *out, size_t size);

#endif /* LAB3_JSON_H */

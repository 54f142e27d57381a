/* SPDX-License-Identifier: MIT */
/*
 * explain.h - what a failure means, in words that name the likely
 * mistake (explain.c): the connection's errors are built from these.
 * Each function only reads its arguments and writes text.
 */
#ifndef LAB3_EXPLAIN_H
#define LAB3_EXPLAIN_H

#include <stddef.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "protocol.h"

/* What rdma_cm's ENODEV means to a user, and what a rejection without a
 * reason means. */
extern const char conn_no_device_msg[], conn_no_listener_msg[];

/* What MSG says, in a few words for a -v trace, into BUF (LEN bytes):
 * "offset 0, 65536 bytes" for a DONE; "" for a KEY, whose bytes a trace
 * does not show. */
void lab3_msg_fields(const struct lab3_msg *msg, char *buf, size_t len);

/* The name of a completion's opcode, for traces and messages. */
const char *lab3_wc_opcode_name(enum ibv_wc_opcode opcode);

/* What a failed completion of a work request of KIND (enum wr_kind in
 * conn_internal.h) with status ST most likely means in this lab, for the
 * statuses a mistake in one's own code causes, with a leading space; ""
 * for the rest. */
const char *lab3_wc_status_meaning(unsigned kind, enum ibv_wc_status st);

/* The printable reason a receiver put in its rejection (see
 * lab3_reject()), or NULL if there is none. */
const char *lab3_rejection_reason(const struct rdma_cm_event *event);

/* What an rdma_cm EVENT that ends a connection means: WHY, in words, and
 * the negative errno that stands for it. */
int lab3_cm_event_meaning(const struct rdma_cm_event *event, char *why,
			  size_t why_len);

/* Why ibv_reg_mr() of LEN bytes failed with errno ERR, in WHY: with a
 * hint at `ulimit -l`, the usual cause of ENOMEM, EPERM or EAGAIN. */
void lab3_reg_meaning(size_t len, int err, char *why, size_t why_len);

#endif /* LAB3_EXPLAIN_H */

/* SPDX-License-Identifier: MIT */
/*
 * explain.c - what a failure means, in words that name the likely
 * mistake (explain.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "conn_internal.h"
#include "explain.h"

/* What rdma_cm's ENODEV means to a user: the address is not on (or routed
 * through) any RDMA device, e.g. a plain Ethernet address without rxe. */
const char conn_no_device_msg[] =
	"no RDMA device reachable for that address";
const char conn_no_listener_msg[] =
	"connection refused (is a receiver listening on that port?)";

/* lab3_msg_fields: what MSG says, for a -v trace (see explain.h).  The
 * texts were checked printable by lab3_decode() (or are our own). */
void lab3_msg_fields(const struct lab3_msg *msg, char *buf, size_t len)
{
	static const char *const codes[] = {
		[LAB3_ERR_PROTOCOL] = "PROTOCOL",
		[LAB3_ERR_TOO_LARGE] = "TOO_LARGE",
		[LAB3_ERR_RESOURCES] = "RESOURCES",
		[LAB3_ERR_NO_KEY] = "NO_KEY",
		[LAB3_ERR_INTERNAL] = "INTERNAL",
	};
	unsigned code = (unsigned)msg->error.code;

	switch (msg->type) {
	case LAB3_MSG_FILE_INFO:
		snprintf(buf, len, "%llu bytes, name \"%s\"",
			 (unsigned long long)msg->file_info.length,
			 msg->file_info.name);
		break;
	case LAB3_MSG_REGION:
		snprintf(buf, len, "offset %llu, %llu bytes, addr 0x%llx, "
			 "rkey 0x%x", (unsigned long long)msg->region.offset,
			 (unsigned long long)msg->region.length,
			 (unsigned long long)msg->region.addr,
			 msg->region.rkey);
		break;
	case LAB3_MSG_DONE:
		snprintf(buf, len, "offset %llu, %llu bytes",
			 (unsigned long long)msg->done.offset,
			 (unsigned long long)msg->done.bytes);
		break;
	case LAB3_MSG_VERDICT:
		snprintf(buf, len, "%s", msg->verdict.verdict ==
			 LAB3_VERDICT_GOOD ? "good" : "bad");
		break;
	case LAB3_MSG_ID:
		snprintf(buf, len, "\"%s\"", msg->id.id);
		break;
	case LAB3_MSG_ERROR:
		snprintf(buf, len, "%s: %s", code <= LAB3_ERR_LAST &&
			 codes[code] != NULL ? codes[code] : "code?",
			 msg->error.reason);
		break;
	default:
		if (len > 0)
			buf[0] = '\0';
	}
}

/* lab3_wc_opcode_name: the name of a completion's opcode, for traces and
 * messages. */
const char *lab3_wc_opcode_name(enum ibv_wc_opcode opcode)
{
	switch (opcode) {
	case IBV_WC_SEND:	return "SEND";
	case IBV_WC_RDMA_WRITE:	return "RDMA_WRITE";
	case IBV_WC_RECV:	return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default:		return "other";
	}
}

/* lab3_wc_status_meaning: what a failed completion of KIND most likely means
 * in this lab, for the statuses a mistake in one's own code causes; ""
 * for the rest. */
const char *lab3_wc_status_meaning(unsigned kind, enum ibv_wc_status st)
{
	if (kind == WR_WRITE && st == IBV_WC_REM_ACCESS_ERR)
		return " (the peer's device refused the WRITE: is it inside "
		       "the window the REGION describes, at its addr plus the "
		       "bytes of the chunk already written, under its rkey?)";
	if (kind == WR_WRITE && (st == IBV_WC_REM_OP_ERR ||
				 st == IBV_WC_REM_INV_REQ_ERR))
		return " (the peer took it as a SEND, longer than any "
		       "message: was it posted with opcode IBV_WR_SEND where "
		       "IBV_WR_RDMA_WRITE belongs?)";
	if (kind == WR_WRITE && (st == IBV_WC_LOC_PROT_ERR ||
				 st == IBV_WC_LOC_QP_OP_ERR))
		return " (the device could not read the bytes the WRITE names "
		       "under its lkey: are they all inside that registration, "
		       "and was it not deregistered, nor its buffer unmapped, "
		       "before the WRITE's completion?)";
	if (kind == WR_RECV && (st == IBV_WC_LOC_PROT_ERR ||
				st == IBV_WC_LOC_QP_OP_ERR))
		return " (the device could not place the peer's message in our "
		       "receive buffer: were the buffers registered with "
		       "IBV_ACCESS_LOCAL_WRITE, which a receive needs?  or was "
		       "the message longer than the buffer?)";
	if (st == IBV_WC_LOC_PROT_ERR)
		return " (the bytes posted are not all inside the memory "
		       "registration whose lkey the work request names)";
	return "";
}

/* lab3_rejection_reason: the printable reason a receiver put in its rejection
 * (see lab3_reject()), or NULL if there is none. */
const char *lab3_rejection_reason(const struct rdma_cm_event *event)
{
	const char *data = event->param.conn.private_data;
	size_t max = event->param.conn.private_data_len;
	size_t len;

	if (data == NULL || max == 0)
		return NULL;
	len = strnlen(data, max);
	if (len == 0 || len == max || lab3_check_text(data, len) != 0)
		return NULL;
	return data;
}

/* lab3_cm_event_meaning: see explain.h. */
int lab3_cm_event_meaning(const struct rdma_cm_event *event, char *why,
			  size_t why_len)
{
	const char *reason = lab3_rejection_reason(event);

	switch (event->event) {
	case RDMA_CM_EVENT_ADDR_ERROR:
		snprintf(why, why_len, "%s", event->status == -ENODEV ?
			 conn_no_device_msg :
			 "cannot resolve the address to an RDMA device");
		return -EHOSTUNREACH;
	case RDMA_CM_EVENT_ROUTE_ERROR:
		snprintf(why, why_len, "no route to the address: %s",
			 strerror(-event->status));
		return -EHOSTUNREACH;
	case RDMA_CM_EVENT_UNREACHABLE:
		snprintf(why, why_len, "the receiver is unreachable");
		return -EHOSTUNREACH;
	case RDMA_CM_EVENT_REJECTED:
		if (reason != NULL)
			snprintf(why, why_len, "connection refused: %s",
				 reason);
		else
			snprintf(why, why_len, "%s", conn_no_listener_msg);
		return -ECONNREFUSED;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		snprintf(why, why_len, "the peer disconnected");
		return -ECONNRESET;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		snprintf(why, why_len, "the RDMA device was removed");
		return -ENODEV;
	default:
		snprintf(why, why_len, "connection lost: %s",
			 rdma_event_str(event->event));
		return -ECONNABORTED;
	}
}

/* lab3_reg_meaning: see explain.h. */
void lab3_reg_meaning(size_t len, int err, char *why, size_t why_len)
{
	if (err == ENOMEM || err == EPERM || err == EAGAIN)
		snprintf(why, why_len, "cannot register %zu bytes of memory "
			 "for RDMA (%s); the locked-memory limit may be too "
			 "low: see `ulimit -l`", len, strerror(err));
	else
		snprintf(why, why_len, "cannot register %zu bytes of memory "
			 "for RDMA: %s", len, strerror(err));
}

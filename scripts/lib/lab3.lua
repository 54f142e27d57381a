-- SPDX-License-Identifier: MIT
-- lab3.lua: a Wireshark dissector for the Lab 3 messages (protocol.h).
--
-- Each Lab 3 message is the payload of one RDMA SEND.  Wireshark decodes
-- RoCE v2 (UDP port 4791) and InfiniBand itself and hands each payload to
-- the heuristic dissectors registered on "infiniband.payload"; this one
-- takes a SEND's payload that begins with the magic "LAB3".  Fields are named
-- after protocol.h's wire structs: lab3.region.rkey is struct
-- lab3_wire_region's rkey, and so on.  Expert warnings mark what the
-- programs' decoder (lab3_decode) refuses in a message: a wrong version,
-- an unknown type, a body length or message size that is not the type's,
-- reserved bytes that are not zero, a length field longer than its text,
-- and values it refuses (a text not printable, an empty ID, a file name
-- with '/' or a leading '.', a verdict or error code that does not
-- exist).  What the rules refuse in a session (a message out of order,
-- a WRITE past the region) is not for a dissector of single messages to
-- see.
--
-- Load it with `tshark -X lua_script:scripts/lib/lab3.lua`, or copy it to
-- ~/.local/lib/wireshark/plugins/ for Wireshark on a desktop.
--
-- With LAB3_WIRE_FIELDS set in the environment it prints each field as
-- "NAME OFFSET SIZE" and each type as "type NUMBER NAME SIZE" when
-- loaded, for tests/wire-fields.test, which compares the lines with
-- offsetof(), sizeof() and lab3_wire_size() from protocol.h.

local MAGIC = 0x4c414233 -- "LAB3"
local VERSION = 2
local HEADER_LEN = 8

-- The message types, their names and their one size.
local TYPES = {
	[1] = { name = "FILE_INFO", key = "file_info", size = 304 },
	[2] = { name = "REGION", key = "region", size = 40 },
	[3] = { name = "DONE", key = "done", size = 24 },
	[4] = { name = "VERDICT", key = "verdict", size = 16 },
	[5] = { name = "ID", key = "id", size = 72 },
	[6] = { name = "KEY", key = "key", size = 40 },
	[7] = { name = "ERROR", key = "error", size = 128 },
}
local VERDICTS = { [0] = "bad", [1] = "good" }
local ERROR_CODES = {
	[1] = "protocol", [2] = "too large", [3] = "resources",
	[4] = "no key", [5] = "internal",
}

-- Every field: message (the struct, without lab3_wire_), field, offset,
-- size, kind.  "reserved" fields must be zero; "text" fields are as long
-- as the length field before them says.
local LAYOUT = {
	{ "header", "magic", 0, 4, "uint" },
	{ "header", "version", 4, 1, "uint" },
	{ "header", "type", 5, 1, "uint" },
	{ "header", "body_len", 6, 2, "uint" },
	{ "file_info", "length", 8, 8, "uint" },
	{ "file_info", "sha256", 16, 32, "bytes" },
	{ "file_info", "name_len", 48, 1, "uint" },
	{ "file_info", "name", 49, 255, "text" },
	{ "region", "addr", 8, 8, "hex" },
	{ "region", "length", 16, 8, "uint" },
	{ "region", "offset", 24, 8, "uint" },
	{ "region", "rkey", 32, 4, "hex" },
	{ "region", "reserved", 36, 4, "reserved" },
	{ "done", "offset", 8, 8, "uint" },
	{ "done", "bytes", 16, 8, "uint" },
	{ "verdict", "verdict", 8, 1, "uint" },
	{ "verdict", "reserved", 9, 7, "reserved" },
	{ "id", "id_len", 8, 1, "uint" },
	{ "id", "id", 9, 63, "text" },
	{ "key", "key", 8, 32, "bytes" },
	{ "error", "code", 8, 1, "uint" },
	{ "error", "reason_len", 9, 1, "uint" },
	{ "error", "reason", 10, 118, "text" },
}

if os.getenv("LAB3_WIRE_FIELDS") then
	for _, f in ipairs(LAYOUT) do
		print(string.format("lab3.%s.%s %d %d", f[1], f[2], f[3], f[4]))
	end
	for n = 0, 255 do
		if TYPES[n] then
			print(string.format("type %d %s %d", n, TYPES[n].name,
				TYPES[n].size))
		end
	end
end

local lab3 = Proto("lab3", "Lab 3 RDMA file transfer")

-- The ProtoFields, by message and field name.
local pf = {}
for _, f in ipairs(LAYOUT) do
	local msg, name, size, kind = f[1], f[2], f[4], f[5]
	local abbrev = "lab3." .. msg .. "." .. name
	local field
	if kind == "text" then
		field = ProtoField.string(abbrev, name)
	elseif kind == "bytes" or kind == "reserved" then
		field = ProtoField.bytes(abbrev, name)
	else
		local base = kind == "hex" and base.HEX or base.DEC
		local make = ({ [1] = ProtoField.uint8, [2] = ProtoField.uint16,
			[4] = ProtoField.uint32, [8] = ProtoField.uint64 })[size]
		local names = nil
		if abbrev == "lab3.header.type" then
			names = {}
			for n, t in pairs(TYPES) do names[n] = t.name end
		elseif abbrev == "lab3.verdict.verdict" then
			names = VERDICTS
		elseif abbrev == "lab3.error.code" then
			names = ERROR_CODES
		end
		field = make(abbrev, name, base, names)
	end
	pf[msg] = pf[msg] or {}
	pf[msg][name] = field
	lab3.fields[#lab3.fields + 1] = field
end

local ef = {
	version = ProtoExpert.new("lab3.bad_version", "Wrong protocol version",
		expert.group.PROTOCOL, expert.severity.WARN),
	type = ProtoExpert.new("lab3.bad_type", "Unknown message type",
		expert.group.PROTOCOL, expert.severity.WARN),
	length = ProtoExpert.new("lab3.bad_length",
		"Body length or message size is not this type's",
		expert.group.MALFORMED, expert.severity.WARN),
	reserved = ProtoExpert.new("lab3.reserved_not_zero",
		"Reserved bytes are not zero", expert.group.PROTOCOL,
		expert.severity.WARN),
	text_len = ProtoExpert.new("lab3.bad_text_length",
		"Length field longer than its text field", expert.group.MALFORMED,
		expert.severity.WARN),
	value = ProtoExpert.new("lab3.bad_value",
		"A value the decoder refuses", expert.group.PROTOCOL,
		expert.severity.WARN),
}
lab3.experts = { ef.version, ef.type, ef.length, ef.reserved, ef.text_len,
	ef.value }

-- printable S: whether S is all printable ASCII, as lab3_check_text()
-- wants of every text field.
local function printable(s)
	return not s:find("[^\32-\126]")
end

-- text TVB OFFSET LEN MAX: the text field's bytes that the capture holds.
local function text(tvb, offset, len, max)
	len = math.min(len or 0, max, math.max(tvb:len() - offset, 0))
	return len > 0 and tvb:raw(offset, len) or ""
end

-- check_values TVB ROOT KEY V: the warnings for the values of message KEY
-- that lab3_decode() refuses: a text that is not printable, an empty ID,
-- a file name with '/' or a leading '.', a verdict or error code that
-- does not exist.
local function check_values(tvb, root, key, v)
	local why
	if key == "file_info" and (v.name_len or 0) > 0 then
		local name = text(tvb, 49, v.name_len, 255)
		if not printable(name) then
			why = "file name has a non-printable character"
		elseif name:find("/", 1, true) then
			why = "file name contains '/'"
		elseif name:sub(1, 1) == "." then
			why = "file name starts with '.'"
		end
	elseif key == "id" and v.id_len ~= nil then
		if v.id_len == 0 then
			why = "empty ID"
		elseif not printable(text(tvb, 9, v.id_len, 63)) then
			why = "ID has a non-printable character"
		end
	elseif key == "verdict" and v.verdict ~= nil and VERDICTS[v.verdict] == nil then
		why = "verdict " .. v.verdict .. " is neither bad (0) nor good (1)"
	elseif key == "error" and v.code ~= nil then
		if ERROR_CODES[v.code] == nil then
			why = "error code " .. v.code .. " does not exist"
		elseif not printable(text(tvb, 10, v.reason_len, 118)) then
			why = "reason has a non-printable character"
		end
	end
	if why then
		root:add_proto_expert_info(ef.value, why)
	end
end

-- add_fields TVB TREE MSG: the fields of message MSG (or "header") that
-- the captured bytes hold, with their warnings.  Returns a table of the
-- values of its number fields, by name.
local function add_fields(tvb, tree, msg)
	local values, text_len = {}, nil
	for _, f in ipairs(LAYOUT) do
		local name, offset, size, kind = f[2], f[3], f[4], f[5]
		if f[1] == msg and offset + size <= tvb:len() then
			local range = tvb(offset, size)
			if kind == "text" then
				local len = math.min(text_len or 0, size)
				local item = tree:add(pf[msg][name], tvb(offset, size),
					range:raw(0, len))
				if text_len and text_len > size then
					item:add_proto_expert_info(ef.text_len)
				end
			else
				local item = tree:add(pf[msg][name], range)
				if kind == "reserved" then
					for i = 0, size - 1 do
						if range(i, 1):uint() ~= 0 then
							item:add_proto_expert_info(ef.reserved)
							break
						end
					end
				elseif kind ~= "bytes" then
					values[name] = size == 8 and range:uint64() or range:uint()
					if name:find("_len$") then text_len = range:uint() end
				end
			end
		end
	end
	return values
end

-- summary TYPE VALUES TVB: the Info column's words for a message.
local function summary(t, v, tvb)
	if t.key == "file_info" then
		return string.format("FILE_INFO length=%s", tostring(v.length))
	elseif t.key == "region" then
		return string.format("REGION offset=%s length=%s addr=0x%s rkey=0x%08x",
			tostring(v.offset), tostring(v.length), v.addr:tohex(), v.rkey)
	elseif t.key == "done" then
		return string.format("DONE offset=%s bytes=%s", tostring(v.offset),
			tostring(v.bytes))
	elseif t.key == "verdict" then
		return "VERDICT " .. (VERDICTS[v.verdict] or tostring(v.verdict))
	elseif t.key == "id" then
		return 'ID "' .. text(tvb, 9, v.id_len, 63):gsub("[^\32-\126]", "?") .. '"'
	elseif t.key == "key" then
		return "KEY " .. tvb(8, 32):bytes():tohex():lower()
	elseif t.key == "error" then
		return string.format("ERROR %s: %s",
			ERROR_CODES[v.code] or tostring(v.code),
			(text(tvb, 10, v.reason_len, 118):gsub("[^\32-\126]", "?")))
	end
end

local function dissect(tvb, pinfo, tree)
	local root = tree:add(lab3, tvb())
	local hdr = add_fields(tvb, root, "header")
	local t = TYPES[hdr.type]
	pinfo.cols.protocol = "Lab3"
	if hdr.version ~= VERSION then
		root:add_proto_expert_info(ef.version, string.format(
			"Protocol version %d, not %d", hdr.version, VERSION))
	end
	if t == nil then
		root:add_proto_expert_info(ef.type, "Unknown message type " ..
			tostring(hdr.type))
		pinfo.cols.info = "Lab 3 unknown type " .. tostring(hdr.type)
		return
	end
	root:append_text(", " .. t.name)
	if hdr.body_len ~= t.size - HEADER_LEN or tvb:len() ~= t.size then
		root:add_proto_expert_info(ef.length, string.format(
			"%s: body length %d and %d bytes; a %s is %d bytes", t.name,
			hdr.body_len, tvb:len(), t.name, t.size))
	end
	local values = add_fields(tvb, root, t.key)
	check_values(tvb, root, t.key, values)
	local ok, words = pcall(summary, t, values, tvb)
	pinfo.cols.info = "Lab 3 " .. (ok and words or t.name)
end

-- The transport's opcode: a Lab 3 message is the payload of a SEND
-- (opcodes 0 to 5 within each transport's 32), never of a WRITE.
local bth_opcode = Field.new("infiniband.bth.opcode")

local function heuristic(tvb, pinfo, tree)
	local op = bth_opcode()
	if tvb:len() < HEADER_LEN or tvb(0, 4):uint() ~= MAGIC or
		(op ~= nil and op.value % 32 > 5) then
		return false
	end
	dissect(tvb, pinfo, tree)
	return true
end

lab3:register_heuristic("infiniband.payload", heuristic)

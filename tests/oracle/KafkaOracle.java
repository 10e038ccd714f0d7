// Test oracle for kafkaproto: answers encode/decode questions using the
// Apache Kafka client library's own generated message classes.
//
// Written against kafka-clients 4.4.0.  The same source serves 3.9.1 (for the
// versions Kafka 4.0 removed): tools/peers/setup_java_oracle.sh compiles a
// copy whose imports name the 3.9 packages (4.x moved the record classes to
// org.apache.kafka.common.record.internal and AppInfoParser to
// org.apache.kafka.common.utils.internals); nothing else differs.
//
// Protocol: one JSON object per line on stdin, one JSON object per line on
// stdout (flushed after every reply).  A failed request is answered with
// {"error": "..."}; the process keeps running until stdin is closed or an
// {"op": "quit"} request arrives.  If a request carries an "id" member, the
// reply echoes it.  See tests/oracle/java_oracle.py for the Python client.

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.record.internal.BaseRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.internals.AppInfoParser;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

public final class KafkaOracle {

    /** A request the oracle refuses; its message becomes the "error" reply. */
    static final class BadRequest extends RuntimeException {
        private static final long serialVersionUID = 1L;

        BadRequest(String message) {
            super(message);
        }
    }

    private static final ObjectMapper MAPPER =
        new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final char[] HEX_DIGITS = "0123456789abcdef".toCharArray();

    /** Converter read/write methods, per generated message class. */
    private static final Map<Class<?>, Method[]> CONVERTERS = new HashMap<>();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            JsonNode reply;
            boolean quit = false;
            try {
                if (line.trim().isEmpty()) {
                    throw new BadRequest("empty request line");
                }
                JsonNode request = MAPPER.readTree(line);
                quit = request != null && request.isObject() && "quit".equals(request.path("op").asText());
                reply = answer(request);
            } catch (Throwable t) {
                reply = errorReply(t, false);
            }
            String text;
            try {
                text = MAPPER.writeValueAsString(reply);
            } catch (Throwable t) {
                text = MAPPER.writeValueAsString(errorReply(t, false));
            }
            out.write(text);
            out.write('\n');
            out.flush();
            if (quit) {
                break;
            }
        }
    }

    // ------------------------------------------------------------------ dispatch

    /** Answers one request; never throws. */
    static JsonNode answer(JsonNode request) {
        JsonNode id = request != null && request.isObject() ? request.get("id") : null;
        ObjectNode reply;
        try {
            if (request == null || !request.isObject()) {
                throw new BadRequest("request must be a JSON object");
            }
            reply = dispatch(request);
        } catch (Throwable t) {
            reply = errorReply(t, request != null && request.path("trace").asBoolean(false));
        }
        if (id != null) {
            reply.set("id", id);
        }
        return reply;
    }

    static ObjectNode dispatch(JsonNode req) throws Exception {
        String op = text(req, "op");
        switch (op) {
            case "ping":
                return ping();
            case "quit":
                return NODES.objectNode().put("bye", true);
            case "encode":
                return encode(req);
            case "decode":
                return decode(req);
            case "encode_header":
                return encodeHeader(req);
            case "decode_header":
                return decodeHeader(req);
            case "header_versions":
                return headerVersions(req);
            case "records_encode":
                return recordsEncode(req);
            case "records_decode":
                return recordsDecode(req);
            case "versions":
                return versions();
            case "message_versions":
                return messageVersions(req);
            case "batch":
                return batch(req);
            default:
                throw new BadRequest("unknown op '" + op + "'");
        }
    }

    static ObjectNode errorReply(Throwable t, boolean withTrace) {
        Throwable cause = t;
        while (cause instanceof InvocationTargetException && cause.getCause() != null) {
            cause = cause.getCause();
        }
        String msg = cause.getMessage();
        String text = cause instanceof BadRequest
            ? msg
            : cause.getClass().getName() + (msg == null ? "" : ": " + msg);
        ObjectNode reply = NODES.objectNode();
        reply.put("error", text);
        reply.put("error_type", cause.getClass().getName());
        StackTraceElement[] frames = cause.getStackTrace();
        if (!(cause instanceof BadRequest) && frames.length > 0) {
            reply.put("error_at", frames[0].toString());
        }
        if (withTrace) {
            StringWriter sw = new StringWriter();
            cause.printStackTrace(new PrintWriter(sw));
            reply.put("trace", sw.toString());
        }
        return reply;
    }

    static ObjectNode ping() {
        ObjectNode reply = NODES.objectNode();
        reply.put("pong", true);
        reply.put("kafka_version", AppInfoParser.getVersion());
        reply.put("kafka_commit", AppInfoParser.getCommitId());
        reply.put("java_version", System.getProperty("java.version"));
        return reply;
    }

    static ObjectNode batch(JsonNode req) {
        JsonNode requests = req.get("requests");
        if (requests == null || !requests.isArray()) {
            throw new BadRequest("'requests' must be an array");
        }
        ArrayNode replies = NODES.arrayNode();
        for (JsonNode r : requests) {
            if (r != null && r.isObject() && "batch".equals(r.path("op").asText())) {
                replies.add(NODES.objectNode().put("error", "nested batch is not allowed"));
            } else {
                replies.add(answer(r));
            }
        }
        ObjectNode reply = NODES.objectNode();
        reply.set("replies", replies);
        return reply;
    }

    // ------------------------------------------------------------ message bodies

    /**
     * A generated message class of org.apache.kafka.common.message by its
     * simple name ("ProduceRequestData", "RequestHeaderData", "AbortedTxn"):
     * the data schemas (and headers) have no api key to find them by.
     */
    static Message messageByClass(String name) {
        if (!name.matches("[A-Za-z0-9]+")) {
            throw new BadRequest("'class' must be a simple class name, not '" + name + "'");
        }
        Class<?> cls;
        try {
            cls = Class.forName("org.apache.kafka.common.message." + name);
        } catch (ClassNotFoundException e) {
            throw new BadRequest("no message class " + name);
        }
        if (!Message.class.isAssignableFrom(cls)) {
            throw new BadRequest(name + " is not a generated message class");
        }
        try {
            return (Message) cls.getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException e) {
            throw new BadRequest("cannot make a " + name + ": " + e);
        }
    }

    /** The message a request names: "class", or "api_key" and "kind". */
    static Message requestedMessage(JsonNode req) {
        if (req.has("class")) {
            return messageByClass(text(req, "class"));
        }
        return newMessage(shortField(req, "api_key"), text(req, "kind"));
    }

    static ObjectNode messageVersions(JsonNode req) {
        JsonNode names = req.get("classes");
        if (names == null || !names.isArray()) {
            throw new BadRequest("'classes' must be an array of class names");
        }
        ObjectNode reply = NODES.objectNode();
        ObjectNode out = reply.putObject("classes");
        for (JsonNode n : names) {
            String name = n.asText();
            ObjectNode entry = out.putObject(name);
            try {
                Message m = messageByClass(name);
                entry.put("lowest", m.lowestSupportedVersion());
                entry.put("highest", m.highestSupportedVersion());
            } catch (BadRequest e) {
                entry.put("error", e.getMessage());
            }
        }
        return reply;
    }

    static Message newMessage(short apiKey, String kind) {
        ApiMessageType type;
        try {
            type = ApiMessageType.fromApiKey(apiKey);
        } catch (RuntimeException e) {
            throw new BadRequest("unknown api_key " + apiKey);
        }
        switch (kind) {
            case "request":
                return type.newRequest();
            case "response":
                return type.newResponse();
            default:
                throw new BadRequest("kind must be 'request' or 'response', not '" + kind + "'");
        }
    }

    static Message newHeader(String kind) {
        switch (kind) {
            case "request":
                return new RequestHeaderData();
            case "response":
                return new ResponseHeaderData();
            default:
                throw new BadRequest("kind must be 'request' or 'response', not '" + kind + "'");
        }
    }

    static void checkVersion(Message m, short version, JsonNode req) {
        if (req.path("unchecked_version").asBoolean(false)) {
            return;
        }
        if (version < m.lowestSupportedVersion() || version > m.highestSupportedVersion()) {
            throw new BadRequest(m.getClass().getSimpleName() + " does not have version " + version
                + " (supported: " + m.lowestSupportedVersion() + ".." + m.highestSupportedVersion() + ")");
        }
    }

    static ObjectNode encode(JsonNode req) throws Exception {
        Message template = requestedMessage(req);
        return encodeMessage(template.getClass(), template, shortField(req, "version"), req);
    }

    static ObjectNode encodeHeader(JsonNode req) throws Exception {
        Message template = newHeader(text(req, "kind"));
        return encodeMessage(template.getClass(), template, shortField(req, "header_version"), req);
    }

    static ObjectNode decode(JsonNode req) throws Exception {
        Message m = requestedMessage(req);
        return decodeMessage(m, shortField(req, "version"), req);
    }

    static ObjectNode decodeHeader(JsonNode req) throws Exception {
        Message m = newHeader(text(req, "kind"));
        return decodeMessage(m, shortField(req, "header_version"), req);
    }

    static ObjectNode encodeMessage(Class<?> cls, Message template, short version, JsonNode req) throws Exception {
        checkVersion(template, version, req);
        JsonNode json = req.get("json");
        if (json == null || !json.isObject()) {
            throw new BadRequest("'json' must be an object");
        }
        List<String> unknown = new ArrayList<>();
        JsonNode filled = fillDefaults(json, cls, version, "", unknown);
        if (req.path("fill_defaults").asBoolean(true)) {
            json = filled;
        }
        Message m = (Message) converterRead(cls).invoke(null, json, version);
        byte[] bytes = serialize(m, version);
        ObjectNode reply = NODES.objectNode();
        reply.put("hex", hex(bytes));
        ArrayNode unknownNode = reply.putArray("unknown_keys");
        for (String k : unknown) {
            unknownNode.add(k);
        }
        if (req.path("echo_json").asBoolean(false)) {
            reply.set("json", converterWrite(m, version));
        }
        return reply;
    }

    static ObjectNode decodeMessage(Message m, short version, JsonNode req) throws Exception {
        checkVersion(m, version, req);
        byte[] data = unhex(text(req, "hex"));
        ByteBuffer buf = ByteBuffer.wrap(data);
        m.read(new ByteBufferAccessor(buf), version);
        int consumed = buf.position();
        byte[] rest = new byte[buf.remaining()];
        buf.get(rest);
        ObjectNode reply = NODES.objectNode();
        reply.set("json", converterWrite(m, version));
        reply.put("hex", hex(serialize(m, version)));
        reply.put("consumed", consumed);
        reply.put("trailing", rest.length);
        reply.put("trailing_hex", hex(rest));
        return reply;
    }

    static byte[] serialize(Message m, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = m.size(cache, version);
        ByteBuffer buf = ByteBuffer.allocate(size);
        m.write(new ByteBufferAccessor(buf), cache, version);
        if (buf.position() != size) {
            throw new IllegalStateException("serializer wrote " + buf.position() + " bytes but size() said " + size);
        }
        return buf.array();
    }

    // ------------------------------------------------- generated JSON converters

    /** The generated converter class for a generated message (or nested struct) class. */
    static Method[] converter(Class<?> cls) throws Exception {
        Method[] methods = CONVERTERS.get(cls);
        if (methods != null) {
            return methods;
        }
        Class<?> outer = cls;
        while (outer.getEnclosingClass() != null) {
            outer = outer.getEnclosingClass();
        }
        String name = outer.getName() + "JsonConverter";
        if (outer != cls) {
            name = name + "$" + cls.getSimpleName() + "JsonConverter";
        }
        Class<?> conv = Class.forName(name);
        Method read = conv.getMethod("read", JsonNode.class, short.class);
        Method write = conv.getMethod("write", cls, short.class, boolean.class);
        methods = new Method[] {read, write};
        CONVERTERS.put(cls, methods);
        return methods;
    }

    static Method converterRead(Class<?> cls) throws Exception {
        return converter(cls)[0];
    }

    static JsonNode converterWrite(Object m, short version) throws Exception {
        JsonNode json = (JsonNode) converter(m.getClass())[1].invoke(null, m, version, true);
        // With serializeRecords=true Kafka's converters write records fields as an
        // empty binary placeholder; put the real record bytes there (base64 text).
        putRecords(json, m);
        return json;
    }

    /** Per generated class: does it hold a records field, directly or in nested structs? */
    private static final Map<Class<?>, Boolean> HAS_RECORDS = new HashMap<>();

    static boolean hasRecords(Class<?> cls) {
        Boolean known = HAS_RECORDS.get(cls);
        if (known != null) {
            return known;
        }
        HAS_RECORDS.put(cls, false); // guards against cycles
        boolean found = false;
        for (Field f : cls.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers())) {
                continue;
            }
            Class<?> struct = structClass(f);
            if (BaseRecords.class.isAssignableFrom(f.getType()) || (struct != null && hasRecords(struct))) {
                found = true;
                break;
            }
        }
        HAS_RECORDS.put(cls, found);
        return found;
    }

    static void putRecords(JsonNode json, Object m) throws Exception {
        if (m == null || json == null || !json.isObject() || !hasRecords(m.getClass())) {
            return;
        }
        ObjectNode obj = (ObjectNode) json;
        for (Field f : m.getClass().getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) || !obj.has(f.getName())) {
                continue;
            }
            if (BaseRecords.class.isAssignableFrom(f.getType())) {
                f.setAccessible(true);
                Object records = f.get(m);
                if (records == null) {
                    obj.putNull(f.getName());
                } else if (records instanceof MemoryRecords) {
                    ByteBuffer b = ((MemoryRecords) records).buffer().duplicate();
                    byte[] bytes = new byte[b.remaining()];
                    b.get(bytes);
                    obj.put(f.getName(), bytes);
                }
                continue;
            }
            Class<?> struct = structClass(f);
            if (struct == null || !hasRecords(struct)) {
                continue;
            }
            f.setAccessible(true);
            Object value = f.get(m);
            JsonNode sub = obj.get(f.getName());
            if (value instanceof Iterable && sub.isArray()) {
                Iterator<JsonNode> nodes = sub.elements();
                for (Object element : (Iterable<?>) value) {
                    if (!nodes.hasNext()) {
                        break;
                    }
                    putRecords(nodes.next(), element);
                }
            } else if (value != null) {
                putRecords(sub, value);
            }
        }
    }

    /**
     * Kafka's converters insist on every field of the version being present.
     * This fills the fields the caller left out with the values a freshly
     * constructed message has (the schema defaults), recursing into nested
     * structs and arrays of structs, and lists in {@code unknown} the keys
     * that are not fields of the message class at all (Kafka's converter
     * ignores those).  Tagged fields holding their default are absent from
     * the converter's output, so the Java fields are what decides here.
     */
    static JsonNode fillDefaults(JsonNode user, Class<?> cls, short version, String path, List<String> unknown)
        throws Exception {
        if (!user.isObject()) {
            return user;
        }
        JsonNode defaults;
        try {
            Object fresh = cls.getDeclaredConstructor().newInstance();
            defaults = converterWrite(fresh, version);
        } catch (Exception e) {
            return user;
        }
        ObjectNode out = NODES.objectNode();
        Iterator<Map.Entry<String, JsonNode>> it = user.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            String key = e.getKey();
            JsonNode value = e.getValue();
            Field field = findField(cls, key);
            if (field == null || Modifier.isStatic(field.getModifiers())) {
                field = null;
                if (!defaults.has(key)) {
                    // not a field of this message at all (a typo?); Kafka ignores it
                    unknown.add(path + key);
                }
            }
            Class<?> struct = field == null ? null : structClass(field);
            if (struct != null && value.isObject()) {
                out.set(key, fillDefaults(value, struct, version, path + key + ".", unknown));
            } else if (struct != null && value.isArray()) {
                ArrayNode arr = NODES.arrayNode();
                int i = 0;
                for (JsonNode element : value) {
                    arr.add(fillDefaults(element, struct, version, path + key + "[" + i + "].", unknown));
                    i++;
                }
                out.set(key, arr);
            } else {
                out.set(key, value);
            }
        }
        Iterator<Map.Entry<String, JsonNode>> dit = defaults.fields();
        while (dit.hasNext()) {
            Map.Entry<String, JsonNode> e = dit.next();
            if (!out.has(e.getKey())) {
                out.set(e.getKey(), e.getValue());
            }
        }
        return out;
    }

    static Field findField(Class<?> cls, String name) {
        try {
            return cls.getDeclaredField(name);
        } catch (NoSuchFieldException e) {
            return null;
        }
    }

    /** The generated struct class held by a field (directly, in a List, or in a generated collection). */
    static Class<?> structClass(Field field) {
        Type type = field.getGenericType();
        if (type instanceof Class && Message.class.isAssignableFrom((Class<?>) type)) {
            return (Class<?>) type;
        }
        if (type instanceof ParameterizedType) {
            Type[] args = ((ParameterizedType) type).getActualTypeArguments();
            if (args.length == 1 && args[0] instanceof Class && Message.class.isAssignableFrom((Class<?>) args[0])) {
                return (Class<?>) args[0];
            }
            return null;
        }
        if (type instanceof Class) {
            Type sup = ((Class<?>) type).getGenericSuperclass();
            while (sup != null) {
                if (sup instanceof ParameterizedType) {
                    for (Type a : ((ParameterizedType) sup).getActualTypeArguments()) {
                        if (a instanceof Class && Message.class.isAssignableFrom((Class<?>) a)) {
                            return (Class<?>) a;
                        }
                    }
                    sup = ((Class<?>) ((ParameterizedType) sup).getRawType()).getGenericSuperclass();
                } else if (sup instanceof Class) {
                    sup = ((Class<?>) sup).getGenericSuperclass();
                } else {
                    sup = null;
                }
            }
        }
        return null;
    }

    // -------------------------------------------------------- versions / headers

    static ApiKeys apiKeys(short key) {
        if (!ApiKeys.hasId(key)) {
            throw new BadRequest("unknown api_key " + key);
        }
        return ApiKeys.forId(key);
    }

    static ObjectNode headerVersions(JsonNode req) {
        ApiKeys api = apiKeys(shortField(req, "api_key"));
        short version = shortField(req, "version");
        ObjectNode reply = NODES.objectNode();
        reply.put("request", api.requestHeaderVersion(version));
        reply.put("response", api.responseHeaderVersion(version));
        reply.put("supported", version >= api.oldestVersion() && version <= api.messageType.highestSupportedVersion(true));
        return reply;
    }

    static ObjectNode versions() {
        ArrayNode apis = NODES.arrayNode();
        for (ApiKeys api : ApiKeys.values()) {
            ObjectNode a = apis.addObject();
            a.put("api_key", api.id);
            a.put("name", api.name);
            a.put("message_type", api.messageType.name());
            a.put("oldest_version", api.oldestVersion());
            a.put("latest_version", api.latestVersion());
            short latestAll = api.messageType.highestSupportedVersion(true);
            a.put("latest_version_unstable", latestAll);
            a.put("latest_version_is_unstable", api.messageType.latestVersionUnstable());
            ArrayNode listeners = a.putArray("listeners");
            for (ApiMessageType.ListenerType l : api.messageType.listeners()) {
                listeners.add(l.name());
            }
            ArrayNode vs = a.putArray("versions");
            for (short v = api.oldestVersion(); v <= latestAll; v++) {
                ObjectNode vn = vs.addObject();
                short reqHeader = api.requestHeaderVersion(v);
                vn.put("version", v);
                vn.put("flexible", reqHeader >= 2);
                vn.put("request_header_version", reqHeader);
                vn.put("response_header_version", api.responseHeaderVersion(v));
                vn.put("deprecated", api.isVersionDeprecated(v));
            }
        }
        ObjectNode reply = NODES.objectNode();
        reply.set("apis", apis);
        reply.put("kafka_version", AppInfoParser.getVersion());
        return reply;
    }

    // ------------------------------------------------------------------ records

    static ObjectNode recordsEncode(JsonNode req) throws Exception {
        ByteBuffer all;
        JsonNode batches = req.get("batches");
        if (batches != null) {
            if (!batches.isArray()) {
                throw new BadRequest("'batches' must be an array");
            }
            List<byte[]> parts = new ArrayList<>();
            int total = 0;
            for (JsonNode b : batches) {
                byte[] p = buildBatch(b);
                parts.add(p);
                total += p.length;
            }
            all = ByteBuffer.allocate(total);
            for (byte[] p : parts) {
                all.put(p);
            }
        } else {
            all = ByteBuffer.wrap(buildBatch(req));
        }
        ObjectNode reply = NODES.objectNode();
        reply.put("hex", hex(all.array()));
        return reply;
    }

    static Compression compression(String codec, JsonNode level) {
        boolean hasLevel = level != null && !level.isNull();
        switch (codec) {
            case "none":
                return Compression.NONE;
            case "gzip":
                return hasLevel ? Compression.gzip().level(level.asInt()).build() : Compression.gzip().build();
            case "snappy":
                return Compression.snappy().build();
            case "lz4":
                return hasLevel ? Compression.lz4().level(level.asInt()).build() : Compression.lz4().build();
            case "zstd":
                return hasLevel ? Compression.zstd().level(level.asInt()).build() : Compression.zstd().build();
            default:
                throw new BadRequest("codec must be one of none, gzip, snappy, lz4, zstd; not '" + codec + "'");
        }
    }

    static TimestampType timestampType(String name) {
        switch (name) {
            case "create":
                return TimestampType.CREATE_TIME;
            case "log_append":
                return TimestampType.LOG_APPEND_TIME;
            case "none":
                return TimestampType.NO_TIMESTAMP_TYPE;
            default:
                throw new BadRequest("timestamp_type must be create, log_append or none; not '" + name + "'");
        }
    }

    static String timestampTypeName(TimestampType t) {
        switch (t) {
            case CREATE_TIME:
                return "create";
            case LOG_APPEND_TIME:
                return "log_append";
            default:
                return "none";
        }
    }

    static byte[] buildBatch(JsonNode b) throws Exception {
        if (b == null || !b.isObject()) {
            throw new BadRequest("a batch must be a JSON object");
        }
        byte magic = (byte) intField(b, "magic", RecordBatch.CURRENT_MAGIC_VALUE);
        if (magic < 0 || magic > 2) {
            throw new BadRequest("magic must be 0, 1 or 2");
        }
        Compression codec = compression(b.path("codec").asText("none"), b.get("level"));
        TimestampType tsType = timestampType(b.path("timestamp_type").asText(magic == 0 ? "none" : "create"));
        long baseOffset = longField(b, "base_offset", 0L);
        long logAppendTime = longField(b, "log_append_time", RecordBatch.NO_TIMESTAMP);
        long producerId = longField(b, "producer_id", RecordBatch.NO_PRODUCER_ID);
        short producerEpoch = (short) intField(b, "producer_epoch", RecordBatch.NO_PRODUCER_EPOCH);
        int baseSequence = intField(b, "base_sequence", RecordBatch.NO_SEQUENCE);
        boolean transactional = b.path("transactional").asBoolean(false);
        boolean control = b.path("control").asBoolean(false);
        int leaderEpoch = intField(b, "partition_leader_epoch", RecordBatch.NO_PARTITION_LEADER_EPOCH);
        JsonNode records = b.get("records");
        if (records == null || !records.isArray()) {
            throw new BadRequest("'records' must be an array");
        }

        ByteBuffer buffer = ByteBuffer.allocate(1024);
        MemoryRecordsBuilder builder = MemoryRecords.builder(buffer, magic, codec, tsType, baseOffset, logAppendTime,
            producerId, producerEpoch, baseSequence, transactional, control, leaderEpoch);
        int index = 0;
        for (JsonNode r : records) {
            if (!r.isObject()) {
                throw new BadRequest("records[" + index + "] must be an object");
            }
            long offset = baseOffset + longField(r, "offset_delta", index);
            long timestamp = longField(r, "timestamp", RecordBatch.NO_TIMESTAMP);
            byte[] key = optionalHex(r, "key_hex");
            byte[] value = optionalHex(r, "value_hex");
            Header[] headers = headers(r.get("headers"), index);
            if (control) {
                builder.appendControlRecordWithOffset(offset, new SimpleRecord(timestamp, key, value, headers));
            } else {
                builder.appendWithOffset(offset, timestamp, key, value, headers);
            }
            index++;
        }
        MemoryRecords built = builder.build();
        ByteBuffer out = built.buffer().duplicate();
        byte[] bytes = new byte[out.remaining()];
        out.get(bytes);
        return bytes;
    }

    static Header[] headers(JsonNode node, int index) {
        if (node == null || node.isNull()) {
            return Record.EMPTY_HEADERS;
        }
        if (!node.isArray()) {
            throw new BadRequest("records[" + index + "].headers must be an array of [key, value_hex|null]");
        }
        Header[] out = new Header[node.size()];
        int i = 0;
        for (JsonNode h : node) {
            if (!h.isArray() || h.size() != 2 || !h.get(0).isTextual()) {
                throw new BadRequest("records[" + index + "].headers[" + i + "] must be [key, value_hex|null]");
            }
            JsonNode v = h.get(1);
            byte[] value = v.isNull() ? null : unhex(v.asText());
            out[i++] = new RecordHeader(h.get(0).asText(), value);
        }
        return out;
    }

    static ObjectNode recordsDecode(JsonNode req) {
        byte[] data = unhex(text(req, "hex"));
        MemoryRecords records = MemoryRecords.readableRecords(ByteBuffer.wrap(data));
        ArrayNode batches = NODES.arrayNode();
        int covered = 0;
        String batchesError = null;
        Iterator<MutableRecordBatch> it = records.batches().iterator();
        while (true) {
            MutableRecordBatch batch;
            try {
                if (!it.hasNext()) {
                    break;
                }
                batch = it.next();
            } catch (RuntimeException e) {
                // e.g. a batch header that claims an impossible size
                batchesError = e.getClass().getName() + ": " + e.getMessage();
                break;
            }
            ObjectNode bn = batches.addObject();
            bn.put("base_offset", batch.baseOffset());
            bn.put("last_offset", batch.lastOffset());
            bn.put("magic", batch.magic());
            bn.put("crc", batch.checksum());
            bn.put("is_valid", batch.isValid());
            bn.put("size_in_bytes", batch.sizeInBytes());
            bn.put("compression", batch.compressionType().name);
            bn.put("timestamp_type", timestampTypeName(batch.timestampType()));
            bn.put("transactional", batch.isTransactional());
            bn.put("control", batch.isControlBatch());
            bn.put("producer_id", batch.producerId());
            bn.put("producer_epoch", batch.producerEpoch());
            bn.put("base_sequence", batch.baseSequence());
            bn.put("last_sequence", batch.lastSequence());
            bn.put("partition_leader_epoch", batch.partitionLeaderEpoch());
            bn.put("max_timestamp", batch.maxTimestamp());
            Integer count = batch.countOrNull();
            if (count == null) {
                bn.putNull("count");
            } else {
                bn.put("count", count);
            }
            OptionalLong horizon = batch.deleteHorizonMs();
            if (horizon.isPresent()) {
                bn.put("delete_horizon_ms", horizon.getAsLong());
            } else {
                bn.putNull("delete_horizon_ms");
            }
            ArrayNode rs = bn.putArray("records");
            try {
                addRecords(rs, batch);
            } catch (RuntimeException e) {
                bn.put("records_error", e.getClass().getName() + ": " + e.getMessage());
            }
            covered += batch.sizeInBytes();
        }
        ObjectNode reply = NODES.objectNode();
        reply.set("batches", batches);
        reply.put("size_in_bytes", data.length);
        reply.put("trailing", data.length - covered);
        if (batchesError != null) {
            reply.put("batches_error", batchesError);
        }
        return reply;
    }

    static void addRecords(ArrayNode rs, RecordBatch batch) {
        for (Record r : batch) {
            ObjectNode rn = rs.addObject();
            rn.put("offset", r.offset());
            rn.put("timestamp", r.timestamp());
            rn.put("sequence", r.sequence());
            rn.put("key_hex", r.hasKey() ? hex(r.key()) : null);
            rn.put("value_hex", r.hasValue() ? hex(r.value()) : null);
            ArrayNode hs = rn.putArray("headers");
            for (Header h : r.headers()) {
                ArrayNode pair = hs.addArray();
                pair.add(h.key());
                pair.add(h.value() == null ? null : hex(h.value()));
            }
        }
    }

    // ------------------------------------------------------------------ helpers

    static String text(JsonNode req, String name) {
        JsonNode n = req.get(name);
        if (n == null || !n.isTextual()) {
            throw new BadRequest("'" + name + "' must be a string");
        }
        return n.asText();
    }

    static short shortField(JsonNode req, String name) {
        JsonNode n = req.get(name);
        if (n == null || !n.canConvertToInt() || !n.isIntegralNumber()
            || n.asInt() < Short.MIN_VALUE || n.asInt() > Short.MAX_VALUE) {
            throw new BadRequest("'" + name + "' must be an int16 number");
        }
        return (short) n.asInt();
    }

    static int intField(JsonNode req, String name, int dflt) {
        JsonNode n = req.get(name);
        if (n == null || n.isNull()) {
            return dflt;
        }
        if (!n.isIntegralNumber() || !n.canConvertToInt()) {
            throw new BadRequest("'" + name + "' must be an int32 number");
        }
        return n.asInt();
    }

    static long longField(JsonNode req, String name, long dflt) {
        JsonNode n = req.get(name);
        if (n == null || n.isNull()) {
            return dflt;
        }
        if (!n.isIntegralNumber() || !n.canConvertToLong()) {
            throw new BadRequest("'" + name + "' must be an int64 number");
        }
        return n.asLong();
    }

    static byte[] optionalHex(JsonNode node, String name) {
        JsonNode n = node.get(name);
        if (n == null || n.isNull()) {
            return null;
        }
        if (!n.isTextual()) {
            throw new BadRequest("'" + name + "' must be a hex string or null");
        }
        return unhex(n.asText());
    }

    static String hex(byte[] bytes) {
        char[] out = new char[bytes.length * 2];
        for (int i = 0; i < bytes.length; i++) {
            out[2 * i] = HEX_DIGITS[(bytes[i] >> 4) & 0xf];
            out[2 * i + 1] = HEX_DIGITS[bytes[i] & 0xf];
        }
        return new String(out);
    }

    static String hex(ByteBuffer buffer) {
        ByteBuffer b = buffer.duplicate();
        byte[] bytes = new byte[b.remaining()];
        b.get(bytes);
        return hex(bytes);
    }

    /** Parses hex; whitespace between digits is allowed, anything else is an error. */
    static byte[] unhex(String s) {
        StringBuilder digits = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isWhitespace(c)) {
                continue;
            }
            if (Character.digit(c, 16) < 0) {
                throw new BadRequest("invalid hex character '" + c + "' at index " + i);
            }
            digits.append(c);
        }
        if (digits.length() % 2 != 0) {
            throw new BadRequest("hex string has an odd number of digits");
        }
        byte[] out = new byte[digits.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) ((Character.digit(digits.charAt(2 * i), 16) << 4) | Character.digit(digits.charAt(2 * i + 1), 16));
        }
        return out;
    }
}

// kafkajs through the scenarios of tests/peers/scenarios.py (run by
// kafkajs_client.js: `node kafkajs_client.js scenario NAME BOOTSTRAP ARGS_JSON`).
//
// Each scenario prints {"wait": what} and reads one line from stdin where the
// suite acts between two phases (more records, a leader moved), and ends with
// one {"result": ...} line, or {"error": ...} and exit code 1.  Records are the
// suite's (ASCII): keys and values print as text, headers as [key, value] pairs.
"use strict";

const readline = require("readline");
const { Kafka, logLevel, CompressionTypes } = require("kafkajs");

const WAIT = 30000;
const CODECS = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy,
                 lz4: CompressionTypes.LZ4, zstd: CompressionTypes.ZSTD };

const lines = readline.createInterface({ input: process.stdin });
const waiting = [];
lines.on("line", () => { const w = waiting.shift(); if (w) w(); });

function emit(obj) { console.log(JSON.stringify(obj)); }

async function pause(what) {
  const go = new Promise((resolve) => waiting.push(resolve));
  emit({ wait: what });
  await go;
}

function text(buf) { return buf === null || buf === undefined ? null : buf.toString(); }

function headerPairs(headers) {
  const out = [];
  for (const [k, v] of Object.entries(headers || {})) {
    for (const one of Array.isArray(v) ? v : [v]) out.push([k, text(one)]);
  }
  return out;
}

function asRecord(partition, m) {
  // kafkajs does not say whether a timestamp is CreateTime or LogAppendTime
  return { partition, offset: Number(m.offset), key: text(m.key), value: text(m.value),
           headers: headerPairs(m.headers), timestamp: Number(m.timestamp), timestamp_type: null };
}

function until(check, what, ms = WAIT) {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const tick = () => {
      if (check()) return resolve();
      if (Date.now() - t0 > ms) return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(tick, 20);
    };
    tick();
  });
}

function consumerFor(kafka, groupId, extra = {}) {
  return kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 300, maxWaitTimeInMs: 100,
                          rebalanceTimeout: 10000, ...extra });
}

// a consumer of its own group reading `topic` from the beginning into `sink`
async function reader(kafka, topic, sink, extra = {}, autoCommit = false) {
  const c = consumerFor(kafka, `kafkajs-reader-${Date.now()}-${Math.random().toString(16).slice(2)}`, extra);
  await c.connect();
  await c.subscribe({ topic, fromBeginning: true });
  await c.run({ autoCommit, eachMessage: async ({ partition, message }) => {
    sink.push(asRecord(partition, message));
  } });
  return c;
}

function message(r) {
  const headers = {};
  for (const [k, v] of r.headers) (headers[k] = headers[k] || []).push(v);
  const m = { partition: 0, key: r.key, value: r.value, headers };
  if (r.timestamp !== null && r.timestamp !== undefined) m.timestamp = String(r.timestamp);
  return m;
}

const scenarios = {
  // records of every codec to partition 0, read back
  async codecs(kafka, a) {
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    for (const [codec, recs] of a.batches) {
      await producer.send({ topic: a.topic, compression: CODECS[codec], acks: -1, messages: recs.map(message) });
    }
    await producer.disconnect();
    const got = [];
    const c = await reader(kafka, a.topic, got);
    await until(() => got.length >= a.count, `${a.count} records`);
    await c.disconnect();
    return { records: got };
  },

  // one member reads everything and commits; a second joins; more records
  async group(kafka, a) {
    const members = [0, 1].map(() => consumerFor(kafka, a.group));
    const read = [[], []];
    const assigned = [null, null];
    const run = async (i) => {
      const c = members[i];
      c.on(c.events.GROUP_JOIN, (e) => { assigned[i] = (e.payload.memberAssignment[a.topic] || []).slice().sort(); });
      await c.connect();
      await c.subscribe({ topic: a.topic, fromBeginning: true });
      await c.run({ autoCommit: false, eachMessage: async ({ partition, message: m }) => {
        read[i].push([partition, Number(m.offset)]);
      } });
    };
    const commit = async (i) => {
      const next = {};
      for (const [p, o] of read[i]) next[p] = Math.max(next[p] || 0, o + 1);
      await members[i].commitOffsets(Object.entries(next).map(([p, o]) => ({ topic: a.topic, partition: Number(p),
                                                                            offset: String(o) })));
    };
    await run(0);
    await until(() => read[0].length >= a.first, `${a.first} records`);
    await commit(0);
    const first = read[0].splice(0);
    await run(1);
    const split = () => assigned[0] && assigned[1] && assigned[0].length && assigned[1].length
      && assigned[0].length + assigned[1].length === a.partitions
      && new Set([...assigned[0], ...assigned[1]]).size === a.partitions;
    await until(split, "both members to hold partitions");
    const assignments = [assigned[0], assigned[1]];
    await pause("rebalanced");
    await until(() => read[0].length + read[1].length >= a.second, `${a.second} more records`);
    await commit(0);
    await commit(1);
    await Promise.all(members.map((c) => c.disconnect()));
    return { first, assignments, second: read };
  },

  // commit chosen offsets, leave; a new member resumes from them
  async commit(kafka, a) {
    const one = consumerFor(kafka, a.group);
    const first = [];
    await one.connect();
    await one.subscribe({ topic: a.topic, fromBeginning: true });
    await one.run({ autoCommit: false, eachMessage: async ({ partition, message: m }) => {
      first.push([partition, Number(m.offset)]);
    } });
    await until(() => first.length >= a.first, `${a.first} records`);
    await one.commitOffsets(Object.entries(a.offsets).map(([p, o]) => ({ topic: a.topic, partition: Number(p),
                                                                        offset: String(o) })));
    await one.disconnect();
    await pause("committed");
    const two = consumerFor(kafka, a.group);
    const resumed = [];
    await two.connect();
    await two.subscribe({ topic: a.topic, fromBeginning: true });
    await two.run({ autoCommit: false, eachMessage: async ({ partition, message: m }) => {
      resumed.push([partition, Number(m.offset)]);
    } });
    await until(() => resumed.length >= a.second, `${a.second} records`);
    const next = {};
    for (const [p, o] of resumed) next[p] = Math.max(next[p] || 0, o + 1);
    await two.commitOffsets(Object.entries(next).map(([p, o]) => ({ topic: a.topic, partition: Number(p),
                                                                    offset: String(o) })));
    await two.disconnect();
    const admin = kafka.admin();
    await admin.connect();
    const committed = {};
    for (const t of await admin.fetchOffsets({ groupId: a.group, topics: [a.topic] })) {
      for (const p of t.partitions) committed[p.partition] = Number(p.offset);
    }
    await admin.disconnect();
    return { first, resumed, committed };
  },

  // committed, aborted, committed; read back both ways
  async transactions(kafka, a) {
    const producer = kafka.producer({ transactionalId: a.txn, idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    for (const [recs, offsets, commit] of a.transactions) {
      const t = await producer.transaction();
      await t.send({ topic: a.topic, acks: -1, messages: recs.map(message) });
      if (offsets.length) {
        await t.sendOffsets({ consumerGroupId: a.group, topics: offsets.map(([topic, partition, offset]) => ({
          topic, partitions: [{ partition, offset: String(offset) }] })) });
      }
      await (commit ? t.commit() : t.abort());
    }
    await producer.disconnect();
    const out = {};
    for (const [name, uncommitted, count] of [["read_committed", false, a.committed],
                                              ["read_uncommitted", true, a.uncommitted]]) {
      const got = [];
      const c = await reader(kafka, a.topic, got, { readUncommitted: uncommitted });
      await until(() => got.length >= count, `${count} records (${name})`);
      await new Promise((r) => setTimeout(r, a.settle_ms));  // nothing more may come
      await c.disconnect();
      out[name] = got;
    }
    return out;
  },

  // Kafka applies a topic's new partitions, configs and deletion on each
  // broker a moment after the admin call returns: what `call` answers once
  // it answers `want` (or its last answer after 10 s)
  async admin(kafka, a) {
    const eventually = async (call, want) => {
      const t0 = Date.now();
      for (;;) {
        const got = await call();
        if (JSON.stringify(got) === JSON.stringify(want) || Date.now() - t0 > 10000) return got;
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const admin = kafka.admin();
    await admin.connect();
    const out = {};
    const call = async (name, body) => {
      try { out[name] = await body(); } catch (e) { out[name] = `error: ${e.name}: ${e.message}`; }
    };
    const partitions = async (t) => (await admin.fetchTopicMetadata({ topics: [t] })).topics[0].partitions.length;
    const configs = async () => {
      const got = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: 2, name: a.new_topic,
        configNames: ["cleanup.policy", "retention.ms"] }] });
      const res = {};
      for (const e of got.resources[0].configEntries) res[e.configName] = e.configValue;
      return res;
    };
    await call("create_topics", async () => {
      await admin.createTopics({ topics: [{ topic: a.new_topic, numPartitions: 1 }], waitForLeaders: true });
      return await eventually(() => partitions(a.new_topic), 1);
    });
    await call("create_partitions", async () => {
      await admin.createPartitions({ topicPartitions: [{ topic: a.new_topic, count: 3 }] });
      return await eventually(() => partitions(a.new_topic), 3);
    });
    await call("describe_configs", configs);
    await call("alter_configs", async () => {
      // AlterConfigs (not incremental): every config not named goes back to its default
      await admin.alterConfigs({ validateOnly: false, resources: [{ type: 2, name: a.new_topic,
        configEntries: [{ name: "retention.ms", value: "86400000" }] }] });
      return await eventually(async () => (await configs())["retention.ms"], "86400000");
    });
    await call("delete_topics", async () => {
      await admin.deleteTopics({ topics: [a.new_topic] });
      return await eventually(async () => !(await admin.listTopics()).includes(a.new_topic), true);
    });
    await call("list_groups", async () => (await admin.listGroups()).groups.some((g) => g.groupId === a.group));
    await call("describe_groups", async () => {
      const g = (await admin.describeGroups([a.group])).groups[0];
      return [g.state, g.members.length];
    });
    await call("delete_groups", async () => {
      await admin.deleteGroups([a.group]);
      return !(await admin.listGroups()).groups.some((g) => g.groupId === a.group);
    });
    await call("delete_records", async () => {
      await admin.deleteTopicRecords({ topic: a.topic, partitions: [{ partition: 0, offset: "2" }] });
      const low = (await admin.fetchTopicOffsets(a.topic)).find((p) => p.partition === 0).low;
      return Number(low);
    });
    await call("describe_cluster", async () => {
      const c = await admin.describeCluster();
      return { brokers: c.brokers.length, controller: c.controller !== null && c.controller >= 0,
               cluster_id: Boolean(c.clusterId) };
    });
    await admin.disconnect();
    return out;
  },

  // a producer and a consumer that stay up while the partition's leader moves
  async leader(kafka, a) {
    const producer = kafka.producer({ allowAutoTopicCreation: false, retry: { retries: 10 } });
    await producer.connect();
    // kafkajs restarts a consumer that meets an error and reads on from the
    // group's commits: committing as it goes is how it reads each record once
    const got = [];
    const c = await reader(kafka, a.topic, got, {}, true);
    const produced = [];
    const send = async (recs) => {
      for (const r of recs) {
        const [res] = await producer.send({ topic: a.topic, acks: -1, messages: [message(r)] });
        produced.push(Number(res.baseOffset));
      }
    };
    const distinct = () => new Set(got.map((r) => r.offset)).size;
    await send(a.before);
    await until(() => distinct() >= a.before.length, `${a.before.length} records`);
    await pause("move");
    await send(a.after);
    const n = a.before.length + a.after.length;
    await until(() => distinct() >= n, `${n} records`);
    await c.disconnect();
    await producer.disconnect();
    return { produced, read: got.map((r) => [r.offset, r.value]) };
  },
};

async function main([name, bootstrap, argsJson]) {
  const a = JSON.parse(argsJson);
  const kafka = new Kafka({ clientId: "kafkajs", brokers: bootstrap.split(","), logLevel: logLevel.NOTHING,
                            connectionTimeout: 10000, requestTimeout: 15000, retry: { retries: 5 } });
  try {
    emit({ result: await scenarios[name](kafka, a) });
    process.exit(0);
  } catch (err) {
    emit({ error: `${err.name}: ${err.message}` });
    process.exit(1);
  }
}

module.exports = { main };

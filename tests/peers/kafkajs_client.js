// kafkajs (tools/peers/install_peers.sh puts it in build/peers/node) through one
// scenario against a broker: the admin client creates a topic and looks at the
// cluster, an idempotent producer writes records (headers repeated, a null key,
// gzip), a consumer group reads them back and commits, the admin lists,
// describes and deletes the group and the topic.
//
//   NODE_PATH=build/peers/node/node_modules node kafkajs_client.js BOOTSTRAP TOPIC GROUP [COUNT]
//
// Every step prints one JSON line {"step", "ok", "detail"}; the exit code is 0
// when the records came back.
//
//   NODE_PATH=... node kafkajs_client.js scenario NAME BOOTSTRAP ARGS_JSON
//
// runs one scenario of the suite that compares brokers (tests/peers/scenarios.py):
// it prints {"wait": what} and reads a line from stdin where the suite acts
// between two phases, then one {"result": ...} line (or {"error": ...}).
"use strict";

const { Kafka, logLevel, CompressionTypes } = require("kafkajs");

if (process.argv[2] === "scenario") {
  require("./kafkajs_scenarios.js").main(process.argv.slice(3));
  return;
}

const [bootstrap, topic, groupId, countArg] = process.argv.slice(2);
const count = Number(countArg || 5);
const kafka = new Kafka({ clientId: "kafkajs", brokers: bootstrap.split(","), logLevel: logLevel.NOTHING,
                          connectionTimeout: 10000, requestTimeout: 15000, retry: { retries: 3 } });
let failed = false;

async function step(name, body, required = false) {
  try {
    const value = await body();
    console.log(JSON.stringify({ step: name, ok: true, detail: JSON.stringify(value === undefined ? null : value) }));
    return value;
  } catch (err) {
    console.log(JSON.stringify({ step: name, ok: false, detail: `${err.name}: ${err.message}` }));
    if (required) failed = true;
    return undefined;
  }
}

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  await step("createTopics", () => admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true }),
             true);
  await step("fetchTopicMetadata", async () => (await admin.fetchTopicMetadata({ topics: [topic] })).topics.length);
  await step("describeCluster", async () => (await admin.describeCluster()).brokers.length);
  await step("describeConfigs", async () => (await admin.describeConfigs({
    resources: [{ type: 2, name: topic }], includeSynonyms: false })).resources.length);

  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const messages = [];
  for (let i = 0; i < count; i++) {
    messages.push({ key: i === 1 ? null : `key-${i}`, value: `value ${i} from kafkajs `.repeat(i + 1),
                    headers: { dup: ["a", "b"], i: String(i) } });
  }
  await step("produce", async () => (await producer.send({ topic, compression: CompressionTypes.GZIP, messages }))
    .map((r) => r.baseOffset), true);
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500, maxWaitTimeInMs: 100 });
  await step("consume", async () => {
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    let got = 0;
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`read ${got} of ${count} records`)), 30000);
      consumer.run({ autoCommit: true, eachMessage: async () => {
        got += 1;
        if (got >= count) { clearTimeout(timer); resolve(); }
      } });
    });
    await consumer.commitOffsets([{ topic, partition: 0, offset: String(count) }]);
    await consumer.disconnect();
    return got;
  }, true);

  await step("listGroups", async () => (await admin.listGroups()).groups.length);
  await step("describeGroups", async () => (await admin.describeGroups([groupId])).groups[0].state);
  await step("fetchOffsets", async () => (await admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions);
  await step("deleteGroups", async () => (await admin.deleteGroups([groupId])).length);
  await step("deleteTopics", () => admin.deleteTopics({ topics: [topic] }));
  await admin.disconnect();
}

main().then(() => process.exit(failed ? 1 : 0), (err) => {
  console.log(JSON.stringify({ step: "main", ok: false, detail: String(err && err.stack || err) }));
  process.exit(1);
});

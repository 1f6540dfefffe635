// Drive `corral run --mode rpc` with Pi's own RpcClient, imported from the installed package.
// argv: <rpc-client.js> <corral-as-node.mjs> <cwd> <pi major: 0 | 1>; prints one JSON object.
import { pathToFileURL } from "node:url";

const [clientPath, cliPath, cwd, major] = process.argv.slice(2);
const { RpcClient } = await import(pathToFileURL(clientPath).href);
const client = new RpcClient({ cliPath, cwd, provider: "scripted", model: "hello", args: ["--surfaces", ""] });
const out = {};
const events = [];
client.onEvent((event) => events.push(event.type));
try {
  await client.start();
  out.stateBefore = await client.getState();
  const settled = client.waitForIdle(30000);
  out.promptResult = (await client.prompt("hi there")) ?? null;
  await settled;
  out.lastText = await client.getLastAssistantText();
  out.messages = (await client.getMessages()).map((m) => m.role);
  out.models = (await client.getAvailableModels()).map((m) => `${m.provider}/${m.id}`);
  out.setModel = await client.setModel("scripted", "other");
  await client.setThinkingLevel("low");
  out.cycleThinking = await client.cycleThinkingLevel();
  await client.setSteeringMode("all");
  await client.setFollowUpMode("all");
  await client.setAutoCompaction(false);
  await client.setAutoRetry(false);
  await client.abortRetry();
  out.bash = await client.bash("echo from-bash");
  await client.abortBash();
  out.stats = await client.getSessionStats();
  out.forkMessages = await client.getForkMessages();
  await client.setSessionName("driven by pi");
  out.commands = await client.getCommands();
  out.stateAfter = await client.getState();
  try {
    await client.exportHtml();
    out.exportHtml = "succeeded";
  } catch (error) {
    out.exportHtml = String(error.message ?? error);
  }
  out.fork = await client.fork(out.forkMessages[0].entryId);
  out.clone = await client.clone();
  out.newSession = await client.newSession();
  out.stateNew = await client.getState();
  if (major === "1") {
    out.steer = (await client.steer("queued steer")) ?? null;
    out.clearQueue = await client.clearQueue();
    out.thinkingLevels = await client.getAvailableThinkingLevels();
    const entries = await client.getEntries();
    out.entryTypes = entries.entries.map((e) => e.type);
    const tree = await client.getTree();
    out.treeRoots = tree.tree.length;
    out.treeLeafIsLast = tree.leafId === entries.entries[entries.entries.length - 1]?.id;
  }
  out.events = [...new Set(events)];
} catch (error) {
  out.error = String(error.stack ?? error);
} finally {
  await client.stop();
}
process.stdout.write(JSON.stringify(out) + "\n");

// Pi's RpcClient starts `node <cliPath> --mode rpc …`; this cliPath runs corral instead.
// Signals are passed on, and corral's exit code is written to $CORRAL_EXIT_FILE and returned.
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";

const child = spawn(process.env.CORRAL_BIN, ["run", ...process.argv.slice(2)], { stdio: "inherit" });
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("exit", (code, signal) => {
  writeFileSync(process.env.CORRAL_EXIT_FILE, JSON.stringify({ code, signal }));
  process.exit(code ?? 1);
});

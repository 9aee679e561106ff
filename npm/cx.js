#!/usr/bin/env node
// cx's npm entry point: runs the native cx of this machine's platform
// package (@cx-cli/cx-<os>-<cpu>, installed beside this one by npm as an
// optional dependency picked by os/cpu), passing arguments, stdio, signals
// and the exit status through. It says which package is missing when npm
// left it out (--no-optional, an unsupported platform).
"use strict";
const { spawn } = require("child_process");
const fs = require("fs");
const path = require("path");

const platforms = { "linux-x64": 1, "linux-arm64": 1, "darwin-x64": 1, "darwin-arm64": 1 };
const key = `${process.platform}-${process.arch}`;
const pkg = `@cx-cli/cx-${key}`;

function fail(msg) {
  process.stderr.write(`cx: ${msg}\n`);
  process.exit(1);
}

if (!platforms[key]) {
  fail(`no cx is built for ${process.platform}/${process.arch} (there is for linux and darwin, x64 and arm64)`);
}

// Where npm puts an optional dependency: inside this package (a local
// install), or beside it (a global one, or a hoisted tree).
function find() {
  try {
    return require.resolve(`${pkg}/bin/cx`);
  } catch (_) {}
  const beside = path.join(__dirname, "..", "..", `cx-${key}`, "bin", "cx");
  return fs.existsSync(beside) ? beside : "";
}

const bin = find();
if (!bin) {
  fail(`the package ${pkg}, which holds cx for ${process.platform}/${process.arch}, is not installed: ` +
    `install @cx-cli/cx again without --no-optional (or --omit=optional)`);
}

const child = spawn(bin, process.argv.slice(2), { stdio: "inherit" });
// A terminal's Ctrl+C reaches cx itself (same process group); signals sent
// to this process alone (a daemon's SIGTERM, a closed terminal) are passed on.
for (const sig of ["SIGTERM", "SIGHUP", "SIGQUIT"]) {
  process.on(sig, () => child.kill(sig));
}
process.on("SIGINT", () => {});
child.on("error", (err) => fail(`cannot run ${bin}: ${err.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code === null ? 1 : code);
});

// The extension's module boundary, checked by `npm run lint` (run by `npm test`): the pure modules
// (unit-tested under plain node, no VS Code and no vscode mock) never import `vscode`, not even a type,
// and never import a module that does. Every module of src/ is in exactly one of the two lists: a new
// one fails the lint until it is placed (and docs/architecture.md names the layers).
import tsParser from "@typescript-eslint/parser";

// No `vscode`: rules, state machines, wire formats (the node:test suites in test/ load these directly).
const PURE = [
  "src/shellqueue.ts", "src/executors/streammarks.ts",
  "src/agentundo.ts", "src/ansi.ts", "src/backoff.ts", "src/branch.ts", "src/connection.ts", "src/consent.ts", "src/dirwatch.ts", "src/dispatcher.ts",
  "src/executors/shellenv.ts", "src/executors/terminalmode.ts", "src/jobs.ts", "src/jsonnum.ts",
  "src/knowledge.ts", "src/listing.ts", "src/manager.ts", "src/oheditor.ts", "src/owned.ts", "src/paths.ts", "src/procs.ts",
  "src/protocol.ts", "src/review/hunks.ts", "src/review/proposal.ts", "src/review/store.ts", "src/runstate.ts", "src/session.ts", "src/statusline.ts", "src/textenc.ts",
  "src/udiff.ts", "src/uri.ts", "src/versions.ts",
];

// The VS Code side: executors, UI, activation (tested against the vscode mock or in real VS Code).
const VSCODE_FACING = [
  "src/branchHost.ts", "src/consentUi.ts", "src/executors/edit.ts", "src/executors/engineshell.ts", "src/executors/files.ts",
  "src/executors/integrated.ts", "src/executors/knowledge.ts", "src/executors/pty.ts", "src/executors/read.ts",
  "src/executors/run.ts", "src/executors/stat.ts", "src/executors/write.ts", "src/executors/writemodes.ts",
  "src/extension.ts", "src/review/controller.ts", "src/review/hunkUi.ts", "src/ui.ts", "src/undoCommand.ts",
];

// The VS Code-facing modules as import specifiers (gitignore-style, relative to any importer).
const FACING_IMPORTS = VSCODE_FACING.map((f) => "**/" + f.replace(/^src\//, "").replace(/\.ts$/, ""));

export default [
  { files: ["src/**/*.ts"], languageOptions: { parser: tsParser, sourceType: "module" } },
  // Short functions, as Python's tests/test_style.py asks of src/oh (issue 38): one that grows past 80 lines is split.
  { files: ["src/**/*.ts"], rules: { "max-lines-per-function": ["error", { max: 80 }] } },
  {
    files: PURE,
    rules: {
      "no-restricted-imports": ["error", {
        paths: [{ name: "vscode", message: "a pure module (unit-tested under node) must not import vscode: move the VS Code part to an executor or ui.ts" }],
        patterns: [{ group: FACING_IMPORTS, message: "a pure module must not import a module that imports vscode" }],
      }],
    },
  },
  {
    files: ["src/**/*.ts"],
    ignores: [...PURE, ...VSCODE_FACING],
    rules: {
      "no-restricted-syntax": ["error", { selector: "Program", message: "place this module in eslint.config.mjs: PURE (no vscode) or VSCODE_FACING" }],
    },
  },
];

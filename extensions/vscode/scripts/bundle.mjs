// Bundles the extension with esbuild: dist/extension.cjs (the extension host loads it; `vscode`
// is provided there) and dist/webview/*.js (scripts of the webviews, for the browser), with
// their CSS copied beside them. `--watch` rebuilds on change; `--dev` keeps names and sourcemaps.
import * as esbuild from "esbuild";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dev = process.argv.includes("--dev");
const common = { bundle: true, minify: !dev, sourcemap: dev, logLevel: "warning", absWorkingDir: root };

const webviews = fs.existsSync(path.join(root, "src/webview"))
  ? fs.readdirSync(path.join(root, "src/webview"), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name)
  : [];

const builds = [
  { ...common, entryPoints: ["src/extension.ts"], outfile: "dist/extension.cjs", platform: "node", format: "cjs", target: "node20", external: ["vscode"] },
  ...webviews.map((name) => ({ ...common, entryPoints: [`src/webview/${name}/main.ts`], outfile: `dist/webview/${name}.js`, platform: "browser", format: "iife", target: "es2022" })),
];

fs.rmSync(path.join(root, "dist"), { recursive: true, force: true });
if (process.argv.includes("--watch")) {
  for (const b of builds) await (await esbuild.context(b)).watch();
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
}
for (const name of webviews) {
  const css = path.join(root, "src/webview", name, "style.css");
  if (fs.existsSync(css)) fs.copyFileSync(css, path.join(root, "dist/webview", `${name}.css`));
}

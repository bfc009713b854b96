// Generates src/protocol/generated.ts from the editor protocol's JSON Schema
// (protocol/schema/lockroom.schema.json and methods.json at the repository's root): one exported
// type per `$defs` entry, and four maps from method name to its params (and result) type —
// requests and notifications, each for what the client sends and what the server sends.
//
// The schema uses a small subset of JSON Schema (tests/support/json_schema.h lists it); a keyword
// outside it stops the generator, naming the keyword and where it is, so nothing is dropped
// silently. Bounds (minimum, maxLength, pattern…) do not exist in TypeScript's types and are
// carried into the doc comment instead.
//   node scripts/gen-protocol.mjs [--check]    (--check: fail if the output would change)
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const schemaDir = path.resolve(here, "../../../protocol/schema");
const out = path.resolve(here, "../src/protocol/generated.ts");

const schema = JSON.parse(fs.readFileSync(path.join(schemaDir, "lockroom.schema.json"), "utf8"));
const { methods } = JSON.parse(fs.readFileSync(path.join(schemaDir, "methods.json"), "utf8"));

const typeKeywords = new Set(["type", "properties", "required", "additionalProperties", "items", "enum", "const", "$ref", "oneOf", "anyOf", "allOf"]);
const docKeywords = new Set(["description", "title", "$comment", "default", "deprecated", "examples"]);
const boundKeywords = new Set(["minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "pattern"]);

/** @param {unknown} value */
const literal = (value) => JSON.stringify(value);
/** @param {string} name */
const key = (name) => (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : literal(name));

/** The doc comment lines of a schema: its description, then its bounds. */
function docOf(s) {
  const lines = [];
  if (typeof s.description === "string") lines.push(s.description);
  const bounds = Object.keys(s).filter((k) => boundKeywords.has(k)).map((k) => `${k} ${literal(s[k])}`);
  if (bounds.length) lines.push(`(${bounds.join(", ")})`);
  if (s.deprecated) lines.push("@deprecated");
  return lines;
}

/** @param {string[]} lines @param {string} indent */
function comment(lines, indent) {
  if (!lines.length) return "";
  const text = lines.join(" ").replace(/\*\//g, "*\\/");
  return `${indent}/** ${text} */\n`;
}

/** TypeScript for one schema, at `where` (for error messages); `indent` for nested objects. */
function typeOf(s, where, indent = "") {
  if (s === true || (typeof s === "object" && Object.keys(s).every((k) => docKeywords.has(k)))) return "unknown";
  if (typeof s !== "object" || s === null) throw new Error(`${where}: a schema must be an object`);
  for (const k of Object.keys(s))
    if (!typeKeywords.has(k) && !docKeywords.has(k) && !boundKeywords.has(k)) throw new Error(`${where}: keyword "${k}" is not one this generator knows`);
  if (s.$ref) {
    const m = /^#\/\$defs\/(.+)$/.exec(s.$ref);
    if (!m || !(m[1] in schema.$defs)) throw new Error(`${where}: $ref ${s.$ref} does not name a $defs entry`);
    return m[1];
  }
  if ("const" in s) return literal(s.const);
  if (s.enum) return s.enum.map(literal).join(" | ");
  for (const combinator of ["oneOf", "anyOf"])
    if (s[combinator]) return s[combinator].map((b, i) => parenthesise(typeOf(b, `${where}.${combinator}[${i}]`, indent))).join(" | ");
  if (s.allOf) return s.allOf.map((b, i) => parenthesise(typeOf(b, `${where}.allOf[${i}]`, indent))).join(" & ");
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  if (!types.length) throw new Error(`${where}: a schema with neither type, $ref, const, enum nor a combinator`);
  return types.map((t) => parenthesise(typeOfKind(t, s, where, indent))).join(" | ");
}

function parenthesise(t) {
  return / [|&] /.test(t) && !t.startsWith("{") ? `(${t})` : t;
}

function typeOfKind(kind, s, where, indent) {
  switch (kind) {
    case "string": return "string";
    case "integer":
    case "number": return "number";
    case "boolean": return "boolean";
    case "null": return "null";
    case "array": return s.items ? `${parenthesise(typeOf(s.items, `${where}.items`, indent))}[]` : "unknown[]";
    case "object": return objectType(s, where, indent);
    default: throw new Error(`${where}: type "${kind}" is not one this generator knows`);
  }
}

function objectType(s, where, indent) {
  const props = s.properties ?? {};
  const required = new Set(s.required ?? []);
  const inner = indent + "  ";
  let body = "";
  for (const [name, p] of Object.entries(props)) {
    body += comment(docOf(p), inner);
    body += `${inner}${key(name)}${required.has(name) ? "" : "?"}: ${typeOf(p, `${where}.properties.${name}`, inner)};\n`;
  }
  const extra = s.additionalProperties;
  if (extra && extra !== false) body += `${inner}[key: string]: ${extra === true ? "unknown" : typeOf(extra, `${where}.additionalProperties`, inner)};\n`;
  if (!body) return extra === false ? "Record<string, never>" : "{ [key: string]: unknown }";
  return `{\n${body}${indent}}`;
}

let text = `// Generated by scripts/gen-protocol.mjs from protocol/schema/ — do not edit; run \`npm run gen\`.
// One type per $defs entry of lockroom.schema.json; the method maps come from methods.json.
/* eslint-disable */

`;
for (const [name, def] of Object.entries(schema.$defs)) {
  text += comment(docOf(def), "");
  const t = typeOf(def, `$defs.${name}`);
  const single = def.type === "object" && !def.oneOf && !def.anyOf && !def.allOf;
  text += single ? `export interface ${name} ${t}\n\n` : `export type ${name} = ${t};\n\n`;
}

const maps = { ClientRequests: [], ClientNotifications: [], ServerRequests: [], ServerNotifications: [] };
for (const [method, m] of Object.entries(methods)) {
  for (const ref of [m.params, m.result].filter(Boolean))
    if (!(ref in schema.$defs)) throw new Error(`methods.json: ${method} names ${ref}, which is not in $defs`);
  const senders = m.from === "both" ? ["client", "server"] : [m.from];
  for (const from of senders) {
    const side = from === "client" ? "Client" : "Server";
    const doc = comment([`${m.kind} sent by the ${from}; protocol/${m.page}`], "  ");
    if (m.kind === "request") maps[`${side}Requests`].push(`${doc}  ${literal(method)}: { params: ${m.params}; result: ${m.result} };\n`);
    else maps[`${side}Notifications`].push(`${doc}  ${literal(method)}: ${m.params};\n`);
  }
}
const what = {
  ClientRequests: "Requests the editor sends, with their params and result.",
  ClientNotifications: "Notifications the editor sends, with their params.",
  ServerRequests: "Requests lockroom sends to the editor, with their params and the editor's result.",
  ServerNotifications: "Notifications lockroom sends, with their params.",
};
for (const [name, entries] of Object.entries(maps)) text += `/** ${what[name]} */\nexport interface ${name} {\n${entries.join("")}}\n\n`;
const requestNames = Object.entries(methods).filter(([, m]) => m.kind === "request" && m.from !== "server").map(([name]) => name);
text += `/** The names of ClientRequests, for checks at run time. */\nexport const clientRequestMethods: readonly (keyof ClientRequests)[] = ${literal(requestNames)};\n`;
text = text.trimEnd() + "\n";

if (process.argv.includes("--check")) {
  const now = fs.existsSync(out) ? fs.readFileSync(out, "utf8") : "";
  if (now !== text) {
    console.error(`gen-protocol: ${path.relative(process.cwd(), out)} is out of date; run npm run gen`);
    process.exit(1);
  }
} else if (!fs.existsSync(out) || fs.readFileSync(out, "utf8") !== text) {
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, text);
}

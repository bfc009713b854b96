// Java spellings for the generator: identifiers, constants and string literals from schema
// names. Pure string work, used by GenerateProtocol.
package dev.lockroom.gen;

import java.util.Set;

final class JavaNames {
  private JavaNames() {}

  static final Set<String> kJavaKeywords = Set.of("abstract", "assert", "boolean", "break", "byte", "case", "catch",
      "char", "class", "const", "continue", "default", "do", "double", "else", "enum", "extends", "final", "finally",
      "float", "for", "goto", "if", "implements", "import", "instanceof", "int", "interface", "long", "native", "new",
      "package", "private", "protected", "public", "return", "short", "static", "strictfp", "super", "switch",
      "synchronized", "this", "throw", "throws", "transient", "try", "void", "volatile", "while", "record", "var",
      "yield", "true", "false", "null");

  static String boxed(String t) {
    switch (t) {
      case "long":
        return "Long";
      case "double":
        return "Double";
      case "boolean":
        return "Boolean";
      default:
        return t;
    }
  }

  static String singular(String hint) {
    if (hint.endsWith("ies")) return hint.substring(0, hint.length() - 3) + "y";
    if (hint.endsWith("sses") || hint.endsWith("xes") || hint.endsWith("ches") || hint.endsWith("shes"))
      return hint.substring(0, hint.length() - 2);
    if (hint.endsWith("s") && !hint.endsWith("ss")) return hint.substring(0, hint.length() - 1);
    return hint + "Item";
  }

  static String capitalize(String s) {
    return Character.toUpperCase(s.charAt(0)) + s.substring(1);
  }

  static String identifier(String property) {
    String id = property.replaceAll("[^A-Za-z0-9_]", "_");
    if (Character.isDigit(id.charAt(0))) id = "_" + id;
    return kJavaKeywords.contains(id) ? id + "_" : id;
  }

  static String constant(String value) {
    switch (value) {
      case " ": return "CONTEXT";
      case "+": return "ADDED";
      case "-": return "REMOVED";
      case "=": return "CONTEXT_EOFNL";
      case ">": return "ADD_EOFNL";
      case "<": return "DEL_EOFNL";
      default: break;
    }
    String snake = value.replaceAll("([a-z0-9])([A-Z])", "$1_$2").replaceAll("[^A-Za-z0-9]+", "_").toUpperCase();
    if (snake.isEmpty() || Character.isDigit(snake.charAt(0))) snake = "V_" + snake;
    return snake;
  }

  static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c == '\n') b.append("\\n");
      else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.append('"').toString();
  }
}

package dev.gpucoll.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * README.md and ARCHITECTURE.md each read as one text: no paragraph, and no sentence of
 * {@value #MIN_CHARS} characters or more, appears twice (the trace of an edit that added a new
 * version and kept the old one), and no paragraph stops mid-sentence. Only prose counts: fenced
 * and indented code, tables, headings and HTML comments are left out, and whitespace is compared
 * collapsed.
 */
class DocsProseTest {
  static final Path ROOT = Path.of("..");
  static final int MIN_CHARS = 60;
  /** How a paragraph may end: a sentence's punctuation, or a colon before a block, then closers. */
  private static final Pattern COMPLETE = Pattern.compile("[.!?:;][)\\]\"'*_`]*$");
  /** A sentence ends at . ! or ? (and closing brackets or quotes) before the capital that starts the next. */
  private static final Pattern SENTENCE_END = Pattern.compile("(?<=[.!?])[)\\]\"']*\\s+(?=[A-Z(`*\\[])");
  private static final Pattern HTML_COMMENT_LINE = Pattern.compile("^\\s*<!--.*-->\\s*$");

  /** A paragraph of prose: its first line (1-based) and its text, whitespace collapsed. */
  record Paragraph(int line, String text) {}

  static List<Paragraph> paragraphs(String markdown) {
    List<Paragraph> out = new ArrayList<>();
    List<String> block = new ArrayList<>();
    int start = 0;
    boolean fenced = false;
    String[] lines = markdown.split("\n", -1);
    for (int i = 0; i <= lines.length; i++) {
      String l = i < lines.length ? lines[i] : "";
      String t = l.strip();
      boolean fence = t.startsWith("```") || t.startsWith("~~~");
      boolean notProse = fenced || fence || t.isEmpty() || t.startsWith("#") || t.startsWith("|")
          || HTML_COMMENT_LINE.matcher(l).matches();
      if (fence) {
        fenced = !fenced;
      }
      if (notProse) {
        if (!block.isEmpty() && !block.stream().allMatch(b -> b.startsWith("    ") || b.startsWith("\t"))) {
          out.add(new Paragraph(start, String.join(" ", block).strip().replaceAll("\\s+", " ")));
        }
        block.clear();
        continue;
      }
      if (block.isEmpty()) {
        start = i + 1;
      }
      block.add(l);
    }
    return out;
  }

  static List<String> sentences(String paragraph) {
    List<String> out = new ArrayList<>();
    Matcher m = SENTENCE_END.matcher(paragraph);
    int from = 0;
    while (m.find()) {
      out.add(paragraph.substring(from, m.start() + m.group().stripTrailing().length()));
      from = m.end();
    }
    out.add(paragraph.substring(from));
    return out;
  }

  /** What is wrong with the prose of {@code markdown}, each problem naming its lines and text. */
  static List<String> problems(String name, String markdown) {
    List<String> out = new ArrayList<>();
    Map<String, List<Integer>> byText = new LinkedHashMap<>();
    for (Paragraph p : paragraphs(markdown)) {
      if (!COMPLETE.matcher(p.text()).find()) {
        out.add(name + " line " + p.line() + ": the paragraph ends mid-sentence: \"…" + tail(p.text()) + "\"");
      }
      if (p.text().length() >= MIN_CHARS) {
        byText.computeIfAbsent(p.text(), t -> new ArrayList<>()).add(p.line());
      }
    }
    Map<String, List<Integer>> bySentence = new LinkedHashMap<>();
    for (Map.Entry<String, List<Integer>> e : byText.entrySet()) {
      if (e.getValue().size() > 1) {
        out.add(name + " lines " + e.getValue() + ": the same paragraph twice: \"" + head(e.getKey()) + "\"");
        continue; // its sentences are that repeat, not others
      }
      for (String s : sentences(e.getKey())) {
        if (s.length() >= MIN_CHARS && !s.equals(e.getKey())) {
          bySentence.computeIfAbsent(s, t -> new ArrayList<>()).add(e.getValue().get(0));
        }
      }
    }
    // A one-sentence paragraph may repeat a sentence of a longer one.
    for (Map.Entry<String, List<Integer>> e : byText.entrySet()) {
      List<Integer> at = bySentence.get(e.getKey());
      if (e.getValue().size() == 1 && at != null) {
        at.add(e.getValue().get(0));
      }
    }
    bySentence.forEach((s, lines) -> {
      if (lines.size() > 1) {
        out.add(name + " paragraphs at lines " + lines + ": the same sentence twice: \"" + head(s) + "\"");
      }
    });
    return out;
  }

  private static String head(String text) {
    return text.length() <= 120 ? text : text.substring(0, 120) + "…";
  }

  private static String tail(String text) {
    return text.length() <= 120 ? text : text.substring(text.length() - 120);
  }

  @ParameterizedTest
  @ValueSource(strings = {"README.md", "ARCHITECTURE.md"})
  void readsAsOneText(String doc) throws Exception {
    String markdown = Files.readString(ROOT.resolve(doc));
    assertFalse(paragraphs(markdown).isEmpty(), doc + " has no prose: is the path right?");
    List<String> problems = problems(doc, markdown);
    assertTrue(problems.isEmpty(), problems.size() + " problem(s) in " + doc + ":\n" + String.join("\n", problems));
  }

  @Test
  void theCheckFindsRepeatsAndBrokenParagraphs() {
    String para = "A paragraph that is long enough to count, said once here and then again.";
    String sentence = "This sentence is long enough to count and is said in two paragraphs.";
    String md = "# Title\n\n" + para + "\n\n```\n" + para + "\n```\n\n    indented code, not prose\n\n"
        + "| a | b |\n|---|---|\n| a table row | that is long enough to count but not prose |\n\n"
        + "Short, twice.\n\nShort, twice.\n\n" + sentence + " Then more words.\n\n"
        + "Other words first. " + sentence + "\n\nStops in the middle of a\n\n"
        + "Introduces a block:\n<!-- a comment -->\n```java\nclass A {}\n```\n\n"
        + "- a list item that\n  goes on (and ends).\n\n" + para + "\n";
    List<Paragraph> ps = paragraphs(md);
    assertEquals(List.of(3, 15, 17, 19, 21, 23, 25, 31, 34), ps.stream().map(Paragraph::line).toList(), ps.toString());
    assertEquals("- a list item that goes on (and ends).", ps.get(7).text());
    assertEquals(List.of("One.", "Two (2).", "Said (so.)", "Three? four"), sentences("One. Two (2). Said (so.) Three? four"));
    List<String> problems = problems("T.md", md);
    assertEquals(3, problems.size(), problems.toString());
    assertTrue(problems.get(0).startsWith("T.md line 23: the paragraph ends mid-sentence: \"…Stops in"), problems.get(0));
    assertTrue(problems.get(1).startsWith("T.md lines [3, 34]: the same paragraph twice: \"A paragraph"), problems.get(1));
    assertTrue(problems.get(2).startsWith("T.md paragraphs at lines [19, 21]: the same sentence twice: \"This sentence"),
        problems.get(2));
  }
}

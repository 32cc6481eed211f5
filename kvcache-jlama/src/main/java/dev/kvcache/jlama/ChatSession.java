package dev.kvcache.jlama;

import com.github.tjake.jlama.safetensors.prompt.PromptSupport;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * A conversation with a Jlama model in which every turn reuses the keys and values of the turns
 * before it. Each turn's prompt is the whole history rendered with the model's chat template (a
 * plain {@code role: content} one if it has none): it starts with the previous turn's prompt and
 * reply, whose blocks the previous turn stored, so only the new message is computed. Nothing is
 * held between turns but the messages: the keys and values are in the cache, where another
 * session, or another process over the same kvcache-server, finds them too.
 *
 * <p>A reply's text is kept as its tokens decode, one by one, so that the next prompt encodes
 * them again to the same tokens with tokenizers that round-trip their own output.
 */
public final class ChatSession {

  /** Who said a message. */
  public enum Role { SYSTEM, USER, ASSISTANT }

  /** A message of the conversation. */
  public record Message(Role role, String content) {
    public Message {
      Objects.requireNonNull(role, "role");
      Objects.requireNonNull(content, "content");
    }
  }

  private final CachedGenerator generator;
  private final List<Message> history = new ArrayList<>();

  /** A conversation with no system message. */
  public ChatSession(CachedGenerator generator) {
    this(generator, null);
  }

  /** A conversation that starts with {@code system}, if it is not null. */
  public ChatSession(CachedGenerator generator, String system) {
    this.generator = Objects.requireNonNull(generator, "generator");
    if (system != null) {
      history.add(new Message(Role.SYSTEM, system));
    }
  }

  /**
   * Sends {@code message} and generates the reply, which joins the history.
   *
   * @param temperature 0 for greedy decoding
   * @param maxTokens the most tokens of the reply
   */
  public synchronized Generation send(String message, float temperature, int maxTokens) {
    history.add(new Message(Role.USER, message));
    Generation reply;
    try {
      reply = generator.generate(generator.encode(prompt(generator, history)), temperature,
          maxTokens, token -> { });
    } catch (RuntimeException e) {
      history.remove(history.size() - 1);
      throw e;
    }
    history.add(new Message(Role.ASSISTANT, reply.text()));
    return reply;
  }

  /** The messages so far, oldest first. */
  public synchronized List<Message> history() {
    return List.copyOf(history);
  }

  /**
   * The prompt of a turn of {@code generator}'s model: {@code messages} rendered with its chat
   * template (a plain one if it has none), then the assistant's turn opened.
   */
  static String prompt(CachedGenerator generator, List<Message> messages) {
    Optional<PromptSupport> support = generator.prefixes().model().promptSupport();
    if (support.isPresent()) {
      PromptSupport.Builder b = support.get().builder().addGenerationPrompt(true);
      for (Message m : messages) {
        switch (m.role()) {
          case SYSTEM -> b.addSystemMessage(m.content());
          case USER -> b.addUserMessage(m.content());
          case ASSISTANT -> b.addAssistantMessage(m.content());
        }
      }
      return b.build().getPrompt();
    }
    StringBuilder plain = new StringBuilder();
    for (Message m : messages) {
      plain.append(m.role().name().toLowerCase(java.util.Locale.ROOT)).append(": ")
          .append(m.content()).append('\n');
    }
    return plain.append("assistant: ").toString();
  }
}

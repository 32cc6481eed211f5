package dev.kvcache.disk.tool;

import static dev.kvcache.disk.internal.RecordLayout.KIND_BLOCK;

import dev.kvcache.BlockKey;
import dev.kvcache.disk.DirectoryLockedException;
import dev.kvcache.disk.device.FileSystemDevice;
import dev.kvcache.disk.device.StorageDevice;
import dev.kvcache.disk.internal.Checkpoint;
import dev.kvcache.disk.internal.DirectoryLock;
import dev.kvcache.disk.internal.DirectoryState;
import dev.kvcache.disk.internal.DirectoryState.LostBlock;
import dev.kvcache.disk.internal.DirectoryState.Loss;
import dev.kvcache.disk.internal.Location;
import dev.kvcache.disk.internal.Records;
import dev.kvcache.disk.internal.SuperBlock;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code kvcache-disk}: checks, describes and repairs a disk tier directory that no process has
 * open.
 *
 * <pre>
 * java -jar kvcache-disk/target/kvcache-disk-tool.jar verify /var/cache/kvcache
 * java -jar kvcache-disk/target/kvcache-disk-tool.jar stats /var/cache/kvcache
 * java -jar kvcache-disk/target/kvcache-disk-tool.jar rebuild /var/cache/kvcache
 * </pre>
 *
 * Exit codes: 0 clean, 1 a block damaged, truncated or missing ({@code verify}: one the index
 * refers to, or the newest record of a key that an index built from the records had to leave
 * out), 2 bad usage or the directory cannot be read or is in use.
 */
@Command(name = "kvcache-disk", mixinStandardHelpOptions = true,
    description = "Checks, describes and repairs a kvcache disk tier directory.",
    subcommands = {DiskTool.Verify.class, DiskTool.Stats.class, DiskTool.Rebuild.class})
public final class DiskTool {

  /** The tool reads and repairs directories on the file system. */
  private static final StorageDevice FILES = FileSystemDevice.INSTANCE;

  public static void main(String[] args) {
    System.exit(run(args, new PrintWriter(System.out, true), new PrintWriter(System.err, true)));
  }

  /** Runs the tool; returns its exit code. */
  public static int run(String[] args, PrintWriter out, PrintWriter err) {
    CommandLine cl = new CommandLine(new DiskTool());
    cl.setOut(out);
    cl.setErr(err);
    cl.setExecutionExceptionHandler((e, cmd, parsed) -> {
      err.println("error: " + e.getMessage());
      return 2;
    });
    return cl.execute(args);
  }

  /** Opens {@code dir} for reading with the lock held, so no tier writes meanwhile. */
  private abstract static class DirectoryCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "DIR", description = "the disk tier directory")
    Path dir;

    @Spec CommandSpec spec;

    PrintWriter out() {
      return spec.commandLine().getOut();
    }

    PrintWriter err() {
      return spec.commandLine().getErr();
    }

    @Override
    public Integer call() throws IOException {
      if (!Files.isDirectory(dir)) {
        err().println("error: " + dir + " is not a directory");
        return 2;
      }
      try (DirectoryLock lock = DirectoryLock.acquire(FILES, dir)) {
        return run();
      } catch (DirectoryLockedException e) {
        err().println("error: " + e.getMessage());
        return 2;
      }
    }

    abstract int run() throws IOException;
  }

  @Command(name = "verify", description = "Reads every record, checks every checksum and every"
      + " index entry; exits 1 if a block the index refers to is damaged, truncated or missing,"
      + " or if an index built from the records (no checkpoint or journal to read) left a"
      + " damaged block out.")
  static final class Verify extends DirectoryCommand {
    @Override
    int run() throws IOException {
      DirectoryState state = DirectoryState.load(FILES, dir, false);
      try {
        long[] counts = new long[4]; // records, intact blocks, damaged blocks, tombstones
        Map<Long, BlockKey> recordAt = new HashMap<>();
        Map<Long, Boolean> intactAt = new HashMap<>();
        int n = 0;
        for (SuperBlock sb : state.superBlocks.values()) {
          n++;
          err().printf("verifying %s (%d of %d)%n", sb.path().getFileName(), n, state.superBlocks.size());
          Records.scan(sb, sb.sizeBytes(), (kind, key, loc) -> {
            counts[0]++;
            long at = ((long) sb.id() << 32) | loc.payloadOffset;
            if (kind == KIND_BLOCK) {
              boolean intact = Records.payloadIntact(sb, loc);
              counts[intact ? 1 : 2]++;
              recordAt.put(at, key);
              intactAt.put(at, intact);
            } else {
              counts[3]++;
            }
          });
        }
        Map<Loss, Long> lost = new EnumMap<>(Loss.class);
        for (Loss loss : Loss.values()) {
          lost.put(loss, 0L);
        }
        for (LostBlock b : state.lostBlocks) {
          lost.merge(b.loss(), 1L, Long::sum);
          out().println(lostLine(b));
        }
        long intactIndexed = 0;
        long[] tags = new long[2]; // intact, damaged
        for (Map.Entry<BlockKey, Location> e : state.index.entrySet()) {
          Location loc = e.getValue();
          long at = ((long) loc.superBlockId << 32) | loc.payloadOffset;
          if (!e.getKey().equals(recordAt.get(at))) {
            lost.merge(Loss.MISSING, 1L, Long::sum);
            out().println("missing: block " + e.getKey() + " should be at offset "
                + loc.payloadOffset + " of super-block " + loc.superBlockId
                + ", which holds no record of it there");
          } else if (!intactAt.get(at)) {
            lost.merge(Loss.DAMAGED, 1L, Long::sum);
            out().println("damaged: block " + e.getKey() + " at offset " + loc.payloadOffset
                + " of super-block " + loc.superBlockId + " fails its checksum");
          } else {
            intactIndexed++;
            SuperBlock sb = state.superBlocks.get(loc.superBlockId);
            if (Records.hasTag(sb, loc)) {
              boolean intact = Records.tagRegion(sb, e.getKey(), loc) != null;
              tags[intact ? 0 : 1]++;
              if (!intact) {
                out().println("damaged tag: block " + e.getKey() + " at offset "
                    + loc.payloadOffset + " of super-block " + loc.superBlockId
                    + " is intact, the tag before it fails its checksum and is not told");
              }
            }
          }
        }
        out().printf("%d super-blocks, %d records: %d intact blocks, %d damaged, %d tombstones%n",
            state.superBlocks.size(), counts[0], counts[1], counts[2], counts[3]);
        long indexed = state.index.size() + state.lostBlocks.size();
        out().printf("index%s: %d blocks, %d intact, %d damaged, %d truncated, %d missing%n",
            state.rebuilt ? " (rebuilt from the records: no usable checkpoint or journal)" : "",
            indexed, intactIndexed, lost.get(Loss.DAMAGED) + lost.get(Loss.RECORD_DAMAGED),
            lost.get(Loss.TRUNCATED),
            lost.get(Loss.MISSING));
        out().printf("tags: %d intact blocks have one, %d of them damaged%n", tags[0] + tags[1],
            tags[1]);
        if (!state.damagedSuperBlocks.isEmpty()) {
          out().println("super-blocks with a damaged header: " + state.damagedSuperBlocks);
        }
        boolean clean = intactIndexed == indexed && state.damagedSuperBlocks.isEmpty();
        out().println(clean ? "clean" : "DAMAGED");
        return clean ? 0 : 1;
      } finally {
        state.close();
      }
    }

    private static String lostLine(LostBlock b) {
      Location loc = b.location();
      String where = "at offset " + loc.payloadOffset + " of super-block " + loc.superBlockId;
      return switch (b.loss()) {
        case MISSING -> "missing: block " + b.key() + " " + where + ", whose file is gone";
        case TRUNCATED -> "truncated: block " + b.key() + " " + where
            + ", whose file ends before the record does";
        case DAMAGED -> "damaged: block " + b.key() + " " + where
            + ", whose file's header is damaged";
        case RECORD_DAMAGED -> "damaged: block " + b.key() + " " + where
            + " fails its checksum; the index was built from the records without it";
      };
    }
  }

  @Command(name = "stats", description = "Prints what the directory holds.")
  static final class Stats extends DirectoryCommand {
    @Override
    int run() throws IOException {
      DirectoryState state = DirectoryState.load(FILES, dir, false);
      try {
        long fileBytes = 0;
        for (SuperBlock sb : state.superBlocks.values()) {
          fileBytes += Files.size(sb.path());
        }
        long live = 0;
        long payload = 0;
        for (Location loc : state.index.values()) {
          live += loc.recordBytes();
          payload += loc.rawLength;
        }
        long journalBytes = 0;
        for (Path j : state.journals.values()) {
          journalBytes += Files.size(j);
        }
        Path cp = dir.resolve(Checkpoint.FILE_NAME);
        out().printf("directory         %s%n", dir);
        out().printf("blocks            %d (%d bytes decoded)%n", state.index.size(), payload);
        out().printf("super-blocks      %d, %d bytes%n", state.superBlocks.size(), fileBytes);
        out().printf("live records      %d bytes (%.1f%% of the super-blocks)%n", live,
            fileBytes == 0 ? 0.0 : 100.0 * live / fileBytes);
        out().printf("journal           %d files, %d bytes%n", state.journals.size(), journalBytes);
        out().printf("checkpoint        %s%n", Files.exists(cp) ? Files.size(cp) + " bytes" : "none");
        out().printf("highest sequence  %d%n", state.maxSequence);
        if (state.rebuilt) {
          out().println("(no usable checkpoint or journal: figures come from scanning the records)");
        }
        return 0;
      } finally {
        state.close();
      }
    }
  }

  @Command(name = "rebuild", description = "Rebuilds the index from the records in the"
      + " super-blocks, replacing the checkpoint and the journal.")
  static final class Rebuild extends DirectoryCommand {
    @Override
    int run() throws IOException {
      DirectoryState state = DirectoryState.fromRecords(FILES, dir);
      try {
        Checkpoint.write(FILES, dir, state.nextGeneration, state.maxSequence,
            state.index.entrySet(), () -> {
              for (SuperBlock sb : state.superBlocks.values()) {
                sb.force();
              }
            });
        for (Path j : state.journals.values()) {
          Files.deleteIfExists(j); // the new checkpoint says to replay from after them
        }
        out().printf("rebuilt the index of %s: %d blocks in %d super-blocks%n", dir,
            state.index.size(), state.superBlocks.size());
        return 0;
      } finally {
        state.close();
      }
    }
  }
}

package io.freshness.hadoop;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system with file permissions read and set by Java itself.
 *
 * <p>Without Hadoop's native library (pyspark ships none), Hadoop's local file system runs a
 * {@code chmod} process for every file and directory it creates with a permission, and an {@code
 * ls -ld} for every listed file whose permission anyone reads (a located listing reads them all).
 * A Hudi commit creates dozens of files (data, checksums, markers, heartbeats, the instant's
 * states), so a JVM writing a commit every few seconds started about 16 processes a second. Java
 * reads and sets POSIX permissions with a system call. Everything else is Hadoop's own ({@code
 * fs.file.impl}).
 */
public class NioLocalFileSystem extends LocalFileSystem {
  public NioLocalFileSystem() {
    super(new Raw());
  }

  /** The raw (unchecksummed) side, where Hadoop forks its shell commands. */
  public static class Raw extends RawLocalFileSystem {
    private static final AtomicLong PERMISSIONS_SET = new AtomicLong();

    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
      java.nio.file.Path path = pathToFile(p).toPath();
      try {
        Files.setPosixFilePermissions(path, posix(permission));
      } catch (NoSuchFileException e) {
        throw new FileNotFoundException("File " + p + " does not exist");
      }
      PERMISSIONS_SET.incrementAndGet();
    }

    @Override
    public FileStatus getFileStatus(Path f) throws IOException {
      return withJavaPermission(super.getFileStatus(f));
    }

    @Override
    public FileStatus getFileLinkStatus(Path f) throws IOException {
      return withJavaPermission(super.getFileLinkStatus(f));
    }

    @Override
    public FileStatus[] listStatus(Path f) throws IOException {
      FileStatus[] statuses = super.listStatus(f);
      for (int i = 0; i < statuses.length; i++) {
        statuses[i] = withJavaPermission(statuses[i]);
      }
      return statuses;
    }

    private FileStatus withJavaPermission(FileStatus status) throws IOException {
      return new JavaPermissionStatus(status, pathToFile(status.getPath()).toPath());
    }

    /** How many permissions Java has set in this JVM (the tests' view). */
    public static long permissionsSet() {
      return PERMISSIONS_SET.get();
    }
  }

  /**
   * A local file's status whose permission, owner and group are read on first use, as Hadoop's
   * own status of a local file does, but by Java instead of an {@code ls -ld} process. Most
   * listings (a Hudi timeline's, a partition's) never read them.
   */
  static final class JavaPermissionStatus extends FileStatus {
    private static final long serialVersionUID = 1L;
    private final transient java.nio.file.Path file;
    private boolean loaded;

    JavaPermissionStatus(FileStatus status, java.nio.file.Path file) throws IOException {
      super(
          status.getLen(),
          status.isDirectory(),
          status.getReplication(),
          status.getBlockSize(),
          status.getModificationTime(),
          status.getAccessTime(),
          null,
          null,
          null,
          status.isSymlink() ? status.getSymlink() : null,
          status.getPath());
      this.file = file;
    }

    private synchronized void load() {
      if (loaded || file == null) {
        return;
      }
      PosixFileAttributes attributes;
      try {
        attributes =
            Files.readAttributes(file, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
      } catch (IOException e) {
        // as Hadoop's own status says when its ls fails
        throw new RuntimeException(
            "Error while reading the permissions of " + file + ": " + e, e);
      }
      setPermission(fsPermission(attributes.permissions()));
      setOwner(attributes.owner().getName());
      setGroup(attributes.group().getName());
      loaded = true;
    }

    @Override
    public FsPermission getPermission() {
      load();
      return super.getPermission();
    }

    @Override
    public String getOwner() {
      load();
      return super.getOwner();
    }

    @Override
    public String getGroup() {
      load();
      return super.getGroup();
    }
  }

  private static final PosixFilePermission[] BITS = {
    PosixFilePermission.OTHERS_EXECUTE,
    PosixFilePermission.OTHERS_WRITE,
    PosixFilePermission.OTHERS_READ,
    PosixFilePermission.GROUP_EXECUTE,
    PosixFilePermission.GROUP_WRITE,
    PosixFilePermission.GROUP_READ,
    PosixFilePermission.OWNER_EXECUTE,
    PosixFilePermission.OWNER_WRITE,
    PosixFilePermission.OWNER_READ,
  };

  /** Hadoop's permission as POSIX bits (a sticky bit has no POSIX file permission in Java). */
  static Set<PosixFilePermission> posix(FsPermission permission) {
    int mode = permission.toShort();
    Set<PosixFilePermission> bits = EnumSet.noneOf(PosixFilePermission.class);
    for (int i = 0; i < BITS.length; i++) {
      if ((mode & (1 << i)) != 0) {
        bits.add(BITS[i]);
      }
    }
    return bits;
  }

  static FsPermission fsPermission(Set<PosixFilePermission> bits) {
    int mode = 0;
    for (int i = 0; i < BITS.length; i++) {
      if (bits.contains(BITS[i])) {
        mode |= 1 << i;
      }
    }
    return new FsPermission((short) mode);
  }
}

// Files tilejit must refuse without touching them: not SQLite, truncated, corrupt, another
// application's database, a newer schema; and a database locked by another writer.
#include "tuner/tune_database.h"

#include "support/error.h"
#include "tests/tuner/tune_test_util.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tilejit {
namespace {

using tune_test::file_bytes;
using tune_test::sample_key;
using tune_test::TempDir;

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void run_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error ? error : "");
  sqlite3_close(db);
}

// A valid tilejit database spanning many pages.
void make_database(const std::string& path, int trials) {
  TuneDatabase db(path);
  for (int i = 0; i < trials; ++i) {
    db.record_trial(sample_key(), {{"BN", i}},
                    TrialResult{TrialStatus::compile_error, {}, {}, std::string(300, 'e')});
  }
}

// Opening `path` must throw an Error naming the path and `problem`, and leave the file (and
// the directory's list of files) exactly as it was.
void expect_refused(const std::string& path, const std::string& problem) {
  std::string before = file_bytes(path);
  auto files_before = std::distance(
      std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()), {});
  try {
    TuneDatabase db(path);
    ADD_FAILURE() << "opened '" << path << "' without complaint";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("'" + path + "'"), std::string::npos) << message;
    EXPECT_NE(message.find(problem), std::string::npos) << message;
  }
  EXPECT_TRUE(file_bytes(path) == before) << "the refused file was modified";
  auto files_after = std::distance(
      std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()), {});
  EXPECT_EQ(files_after, files_before) << "files were created or deleted beside it";
}

TEST(TuneDatabaseSafety, RandomBytesAreNotSqlite) {
  TempDir dir;
  std::string path = dir.file("random.db");
  std::mt19937 rng(7);
  std::string bytes(8192, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  write_bytes(path, bytes);
  expect_refused(path, "is not a tilejit tuning database: not an SQLite file");
}

TEST(TuneDatabaseSafety, ShortTextFileIsNotSqlite) {
  TempDir dir;
  std::string path = dir.file("notes.txt");
  write_bytes(path, "my notes\n");
  expect_refused(path, "not an SQLite file (9 bytes");
}

TEST(TuneDatabaseSafety, TruncatedDatabaseIsRefused) {
  TempDir dir;
  std::string path = dir.file("t.db");
  make_database(path, 200);
  std::string whole = file_bytes(path);
  ASSERT_GT(whole.size(), 16u * 4096) << "want a database of many pages";
  for (size_t size : {whole.size() / 2, size_t{4096}, size_t{4096 + 100}}) {
    write_bytes(path, whole.substr(0, size));
    expect_refused(path, "damaged tilejit tuning database: truncated");
  }
  write_bytes(path, whole.substr(0, 50));
  expect_refused(path, "not an SQLite file");
}

TEST(TuneDatabaseSafety, CorruptPagesAreFoundByQuickCheck) {
  TempDir dir;
  std::string path = dir.file("t.db");
  make_database(path, 200);
  std::string bytes = file_bytes(path);
  // Scribble over a stretch of b-tree pages but keep the header and schema page intact.
  std::mt19937 rng(11);
  for (size_t i = 3 * 4096; i < 9 * 4096; ++i) bytes[i] = static_cast<char>(rng());
  write_bytes(path, bytes);
  expect_refused(path, "damaged tilejit tuning database");
}

TEST(TuneDatabaseSafety, ForeignSqliteDatabaseIsRefused) {
  TempDir dir;
  std::string path = dir.file("app.db");
  run_sql(path, "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT);"
                "INSERT INTO users(name) VALUES ('ada');");
  expect_refused(path, "an SQLite database of another application (application_id 0x00000000, "
                       "tables: users)");
}

TEST(TuneDatabaseSafety, ForeignWalDatabaseIsRefused) {
  TempDir dir;
  std::string path = dir.file("app.db");
  run_sql(path, "PRAGMA journal_mode = WAL; PRAGMA application_id = 42;"
                "CREATE TABLE things(x); INSERT INTO things VALUES (1);");
  expect_refused(path, "another application (application_id 0x0000002A, tables: things)");
}

TEST(TuneDatabaseSafety, ForeignApplicationIdWithoutTablesIsRefused) {
  TempDir dir;
  std::string path = dir.file("app.db");
  run_sql(path, "PRAGMA application_id = 7; PRAGMA user_version = 1;");
  // Setting only pragmas may leave a zero-byte file, which holds nothing to protect.
  if (std::filesystem::file_size(path) == 0) GTEST_SKIP() << "SQLite wrote nothing";
  expect_refused(path, "another application (application_id 0x00000007, user_version 1, "
                       "tables: none)");
}

// A file someone else stamped (user_version 3) is theirs even with no tables: never taken over,
// whether the command reads or writes.
TEST(TuneDatabaseSafety, ForeignUserVersionWithoutTablesIsRefused) {
  TempDir dir;
  std::string path = dir.file("app.db");
  run_sql(path, "PRAGMA user_version = 3;");
  if (std::filesystem::file_size(path) == 0) GTEST_SKIP() << "SQLite wrote nothing";
  expect_refused(path, "another application (application_id 0x00000000, user_version 3, "
                       "tables: none)");
  TuneDatabaseOptions read_only;
  read_only.read_only = true;
  EXPECT_THROW(TuneDatabase(path, read_only), Error);
  std::string bytes = file_bytes(path);
  EXPECT_EQ(bytes.substr(60, 4), std::string("\0\0\0\3", 4)) << "user_version was reset";
}

// Read-only use writes nothing: an empty file stays empty (no schema), a database is not
// changed, a missing file is not created, and a write is refused with a reason.
TEST(TuneDatabaseSafety, ReadOnlyOpeningWritesNothing) {
  TempDir dir;
  TuneDatabaseOptions read_only;
  read_only.read_only = true;
  std::string empty = dir.file("empty.db");
  write_bytes(empty, "");
  {
    TuneDatabase db(empty, read_only);
    EXPECT_TRUE(db.list().empty());
    EXPECT_THROW(db.record_trial(sample_key(), {{"BN", 1}}, TrialResult{}), Error);
  }
  EXPECT_EQ(std::filesystem::file_size(empty), 0u) << "a read-only open created the schema";
  EXPECT_THROW(TuneDatabase(dir.file("absent.db"), read_only), Error);
  EXPECT_FALSE(std::filesystem::exists(dir.file("absent.db")));

  std::string path = dir.file("t.db");
  make_database(path, 3);
  std::string before = file_bytes(path);
  {
    TuneDatabase db(path, read_only);
    EXPECT_EQ(db.list().size(), 1u);
    try {
      db.set_winner(sample_key(), {{"BN", 1}}, 1.0);
      ADD_FAILURE() << "wrote through a read-only open";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("was opened read-only"), std::string::npos);
    }
  }
  EXPECT_TRUE(file_bytes(path) == before);
}

// A database on a read-only directory (another user's, a read-only mount) can be read; writing
// to it says why it cannot. Root ignores permissions, so the check runs as user nobody.
TEST(TuneDatabaseSafety, ReadOnlyDirectoryCanBeRead) {
  TempDir dir;
  std::string sub = dir.file("ro");
  std::filesystem::create_directory(sub);
  std::string path = sub + "/t.db";
  make_database(path, 2);
  ASSERT_FALSE(std::filesystem::exists(path + "-shm"));
  ::chmod(path.c_str(), 0444);
  ::chmod(sub.c_str(), 0555);
  ::chmod(dir.path().c_str(), 0755);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(10);
    int code = 0;
    try {
      TuneDatabaseOptions read_only;
      read_only.read_only = true;
      TuneDatabase db(path, read_only);
      if (db.list().size() != 1) code = 11;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "read-only open failed: %s\n", e.what());
      code = 12;
    }
    try {
      TuneDatabase db(path);
      db.record_trial(sample_key(), {{"BN", 1}}, TrialResult{});
      code = code ? code : 13;
    } catch (const Error& e) {
      if (std::string(e.what()).find("read-only") == std::string::npos) {
        std::fprintf(stderr, "write error without the reason: %s\n", e.what());
        code = code ? code : 14;
      }
    }
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ::chmod(sub.c_str(), 0755);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 10) GTEST_SKIP() << "cannot become nobody";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
}

// SQLite cannot open a file whose full path is over 504 bytes: the error says so, and a path of
// exactly the limit works.
TEST(TuneDatabaseSafety, OverlongPathIsNamedWithTheLimit) {
  TempDir dir;
  std::string base = std::filesystem::canonical(dir.path()).string();
  std::string deep = base;
  while (deep.size() < 400) deep += "/" + std::string(60, 'd');
  std::filesystem::create_directories(deep);
  auto path_of = [&](size_t length) {
    return deep + "/" + std::string(length - deep.size() - 4, 'x') + ".db";
  };
  std::string longest = path_of(TuneDatabase::max_path_bytes);
  ASSERT_EQ(longest.size(), TuneDatabase::max_path_bytes);
  {
    TuneDatabase db(longest);
    db.record_trial(sample_key(), {{"BN", 1}}, TrialResult{});
    EXPECT_EQ(db.list().size(), 1u);
  }
  std::string too_long = path_of(TuneDatabase::max_path_bytes + 1);
  try {
    TuneDatabase db(too_long);
    ADD_FAILURE() << "opened a path SQLite cannot";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is 505 bytes long as a full path; SQLite accepts at "
                                         "most 504"),
              std::string::npos)
        << e.what();
  }
}

TEST(TuneDatabaseSafety, NewerSchemaVersionIsRefused) {
  TempDir dir;
  std::string path = dir.file("t.db");
  make_database(path, 3);
  run_sql(path, "PRAGMA user_version = 99");
  expect_refused(path, "was written by a newer tilejit (schema version 99; this build "
                       "understands up to 1)");
}

TEST(TuneDatabaseSafety, MissingTableIsRefused) {
  TempDir dir;
  std::string path = dir.file("t.db");
  make_database(path, 1);
  run_sql(path, "DROP VIEW trials_with_keys; DROP TABLE binaries");
  expect_refused(path, "damaged tilejit tuning database: table 'binaries' is missing");
}

TEST(TuneDatabaseSafety, DirectoryIsRefused) {
  TempDir dir;
  std::filesystem::create_directory(dir.file("sub"));
  EXPECT_THROW(TuneDatabase db(dir.file("sub")), Error);
}

TEST(TuneDatabaseSafety, LockedDatabaseGivesAClearError) {
  TempDir dir;
  std::string path = dir.file("t.db");
  make_database(path, 1);
  TuneDatabase db(path, TuneDatabaseOptions{/*busy_timeout_ms=*/50, /*lock_wait_ms=*/300});
  // Another writer holds the write lock for longer than we are willing to wait.
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  try {
    db.record_trial(sample_key(), {{"BN", 1}}, TrialResult{});
    ADD_FAILURE() << "wrote through another writer's lock";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("'" + path + "' is locked"), std::string::npos) << message;
  }
  // Readers are not blocked by a writer in WAL mode.
  EXPECT_EQ(db.trials_for(sample_key()).size(), 1u);
  sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  db.record_trial(sample_key(), {{"BN", 1}}, TrialResult{});
  EXPECT_EQ(db.trials_for(sample_key()).size(), 2u);
}

} // namespace
} // namespace tilejit

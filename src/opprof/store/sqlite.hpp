#pragma once
// Thin RAII over the SQLite C API for the profile writer and reader: a connection, prepared statements
// with typed binds and columns, and one error type carrying SQLite's own message. The store's public
// functions turn SqliteError into OutputError (writing) or InputError (reading) with the file's name.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace opprof::sqlite {

class SqliteError : public std::runtime_error {
 public:
  SqliteError(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

class Database {
 public:
  // flags are sqlite3_open_v2's (SQLITE_OPEN_READONLY, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE).
  Database(const std::string& path, int flags);
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  // Runs one or more statements that return no rows.
  void exec(std::string_view sql);
  // Closes the connection, reporting a failure (an unfinalized statement, an I/O error on close) instead
  // of hiding it in the destructor. Every Statement must be destroyed first.
  void close();
  sqlite3* handle() const { return db_; }
  std::string errmsg() const;
  // True when a table or view of that name exists.
  bool has_table(std::string_view name);

 private:
  sqlite3* db_ = nullptr;
};

class Statement {
 public:
  Statement(Database& db, std::string_view sql);
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Parameters are 1-based, as in SQLite.
  void bind_int(int i, std::int64_t v);
  void bind_double(int i, double v);  // NaN and infinities are bound as NULL: SQL has no NaN
  void bind_text(int i, std::string_view v);  // the bytes must outlive the next step()
  void bind_null(int i);

  // Steps a statement that returns no rows and resets it for the next binding.
  void run();
  // Steps a query: true while a row is available.
  bool next();
  void reset();

  // Columns are 0-based, as in SQLite.
  bool is_null(int c) const;
  std::int64_t column_int(int c) const;
  double column_double(int c) const;  // NULL reads as NaN
  std::string column_text(int c) const;  // NULL reads as ""
  std::string_view column_view(int c) const;  // as column_text, valid until the next step() or reset()

 private:
  [[noreturn]] void fail(int rc) const;
  Database* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace opprof::sqlite

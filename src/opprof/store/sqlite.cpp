#include "opprof/store/sqlite.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <cmath>
#include <limits>

namespace opprof::sqlite {

Database::Database(const std::string& path, int flags) {
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    // sqlite3_open_v2 hands back a connection even on failure, so that its message can be read.
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw SqliteError(rc, msg);
  }
  // Extended codes tell SQLITE_IOERR_WRITE from SQLITE_IOERR_FSYNC in messages.
  sqlite3_extended_result_codes(db_, 1);
}

Database::~Database() {
  // close_v2 defers the close when a statement is still alive instead of leaking the connection.
  if (db_) sqlite3_close_v2(db_);
}

void Database::exec(std::string_view sql) {
  std::string text(sql);  // sqlite3_exec wants a NUL-terminated string
  char* err = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    throw SqliteError(rc, msg);
  }
}

void Database::close() {
  if (!db_) return;
  int rc = sqlite3_close(db_);
  if (rc != SQLITE_OK) throw SqliteError(rc, sqlite3_errmsg(db_));
  db_ = nullptr;
}

std::string Database::errmsg() const { return db_ ? sqlite3_errmsg(db_) : "database is closed"; }

bool Database::has_table(std::string_view name) {
  Statement q(*this, "SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?1");
  q.bind_text(1, name);
  return q.next();
}

Statement::Statement(Database& db, std::string_view sql) : db_(&db) {
  int rc = sqlite3_prepare_v3(db.handle(), sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                              &stmt_, nullptr);
  if (rc != SQLITE_OK) throw SqliteError(rc, fmt::format("{} (in: {})", db.errmsg(), sql));
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::fail(int rc) const {
  throw SqliteError(rc, fmt::format("{} (in: {})", db_->errmsg(), sqlite3_sql(stmt_)));
}

void Statement::bind_int(int i, std::int64_t v) {
  int rc = sqlite3_bind_int64(stmt_, i, v);
  if (rc != SQLITE_OK) fail(rc);
}

void Statement::bind_double(int i, double v) {
  int rc = std::isfinite(v) ? sqlite3_bind_double(stmt_, i, v) : sqlite3_bind_null(stmt_, i);
  if (rc != SQLITE_OK) fail(rc);
}

void Statement::bind_text(int i, std::string_view v) {
  // SQLITE_STATIC: the writer binds views into the timeline's string arena, which outlives the step,
  // so SQLite need not copy each string.
  // A null data pointer would bind NULL; an empty view means the empty string.
  const char* p = v.data() ? v.data() : "";
  int rc = sqlite3_bind_text64(stmt_, i, p, v.size(), SQLITE_STATIC, SQLITE_UTF8);
  if (rc != SQLITE_OK) fail(rc);
}

void Statement::bind_null(int i) {
  int rc = sqlite3_bind_null(stmt_, i);
  if (rc != SQLITE_OK) fail(rc);
}

void Statement::run() {
  int rc = sqlite3_step(stmt_);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
    sqlite3_reset(stmt_);
    fail(rc);
  }
  sqlite3_reset(stmt_);
}

bool Statement::next() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  fail(rc);
}

void Statement::reset() { sqlite3_reset(stmt_); }

bool Statement::is_null(int c) const { return sqlite3_column_type(stmt_, c) == SQLITE_NULL; }

std::int64_t Statement::column_int(int c) const { return sqlite3_column_int64(stmt_, c); }

double Statement::column_double(int c) const {
  if (is_null(c)) return std::numeric_limits<double>::quiet_NaN();
  return sqlite3_column_double(stmt_, c);
}

std::string Statement::column_text(int c) const { return std::string(column_view(c)); }

std::string_view Statement::column_view(int c) const {
  const unsigned char* p = sqlite3_column_text(stmt_, c);
  if (!p) return {};
  return {reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, c))};
}

}  // namespace opprof::sqlite

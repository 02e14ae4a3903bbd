#include "status/standby_status.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdio>

namespace hvd::launcher {

using common::Result;
using common::Status;
using nlohmann::json;

namespace {

// (Names here are the file's own: the launcher's folders build as one
// translation unit each, and status_text.cc has its own helpers.)

constexpr std::pair<LeaderPage::Kind, const char*> kPageKinds[] = {
    {LeaderPage::Kind::kUrl, "url"},
    {LeaderPage::Kind::kLoopbackOnly, "loopback"},
    {LeaderPage::Kind::kOff, "off"}};

const char* PageKindName(LeaderPage::Kind kind) {
  for (const auto& [k, name] : kPageKinds) {
    if (k == kind) return name;
  }
  return "off";
}

// "http://HOST:PORT" (or https), nothing after the port: what a Location
// header and a reader's browser can take as it is.
bool IsUrlBase(const std::string& url) {
  size_t rest = 0;
  for (const char* scheme : {"http://", "https://"}) {
    if (url.rfind(scheme, 0) == 0) rest = std::string_view(scheme).size();
  }
  if (rest == 0 || url.size() == rest || url.size() > 300) return false;
  for (size_t i = rest; i < url.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(url[i]);
    if (c <= 0x20 || c >= 0x7f || c == '/' || c == '?' || c == '#' ||
        c == '@' || c == '\\') {
      return false;
    }
  }
  return true;
}

std::string HtmlEscaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string StandbyAgo(const json& at_ms, double now_ms) {
  if (!at_ms.is_number()) return "-";
  const double seconds = (now_ms - at_ms.get<double>()) / 1000;
  char text[32];
  std::snprintf(text, sizeof(text), "%.0f s ago", seconds < 0 ? 0 : seconds);
  return text;
}

std::string StandbyString(const json& value) {
  return value.is_string() ? value.get<std::string>() : "-";
}

}  // namespace

std::string EncodeLeaderPage(const LeaderPage& page) {
  return json{{"kind", PageKindName(page.kind)},
              {"url", page.url},
              {"host", page.host},
              {"leader", page.leader},
              {"since_ms", page.since_ms}}
      // A URL and a machine's name: outside text, maybe not UTF-8.
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<LeaderPage> ParseLeaderPage(std::string_view text) {
  const std::string shown = "the leader's status page record '" +
                            std::string(text.substr(0, 200)) + "'";
  auto parsed = json::parse(text, nullptr, false);
  if (!parsed.is_object()) {
    return Status::InvalidArgument(shown + " is no JSON object");
  }
  LeaderPage page;
  const json& kind = parsed.value("kind", json());
  bool known = false;
  for (const auto& [k, name] : kPageKinds) {
    if (kind == name) {
      page.kind = k;
      known = true;
    }
  }
  if (!known) {
    return Status::InvalidArgument(shown + " has no kind url, loopback or off");
  }
  for (auto [field, into] :
       {std::pair{"url", &page.url}, std::pair{"host", &page.host},
        std::pair{"leader", &page.leader}}) {
    const json& value = parsed.value(field, json());
    if (!value.is_string()) {
      return Status::InvalidArgument(shown + " has no string '" +
                                     std::string(field) + "'");
    }
    *into = value.get<std::string>();
  }
  const json& since = parsed.value("since_ms", json());
  if (!since.is_number_integer()) {
    return Status::InvalidArgument(shown + " has no integer since_ms");
  }
  page.since_ms = since.get<int64_t>();
  if (page.kind != LeaderPage::Kind::kOff && !IsUrlBase(page.url)) {
    return Status::InvalidArgument(
        shown + ": its url is no http://HOST:PORT (nothing after the port)");
  }
  return page;
}

bool IsLoopbackHost(std::string_view bind_host) {
  const std::string host(bind_host);
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

LeaderPage PageToPublish(const std::string& bind_host, const std::string& url,
                         const std::string& host) {
  LeaderPage page;
  page.kind = IsLoopbackHost(bind_host) ? LeaderPage::Kind::kLoopbackOnly
                                        : LeaderPage::Kind::kUrl;
  page.url = url;
  page.host = host;
  return page;
}

std::optional<std::string> RedirectLocation(const StandbyView& view,
                                            std::string_view path,
                                            std::string_view target) {
  if (!NoRedirectReason(view).empty()) return std::nullopt;
  if (path != "/" && path != "/index.html" && path != "/status.json") {
    return std::nullopt;
  }
  std::string location = view.page->url + std::string(path);
  const size_t mark = target.find('?');
  if (mark == std::string_view::npos) return location;
  location += '?';
  for (char c : target.substr(mark + 1)) {
    const unsigned char byte = static_cast<unsigned char>(c);
    if (byte > 0x20 && byte < 0x7f && byte != '#') {
      location += c;
    } else {
      char escaped[4];
      std::snprintf(escaped, sizeof(escaped), "%%%02X", byte);
      location += escaped;
    }
  }
  return location;
}

std::string NoRedirectReason(const StandbyView& view) {
  const std::string job = "job '" + view.job_id + "'";
  if (view.taking_over) {
    return "this hvdrun leads " + job +
           " now and is taking it over; its own status follows here";
  }
  if (view.leader.empty()) {
    return "no hvdrun leads " + job +
           " at this moment: a standby (perhaps this one) takes it over "
           "as soon as it wins the lead";
  }
  if (!view.page_error.empty()) {
    return "the status page " + view.leader +
           " published in etcd cannot be read: " + view.page_error;
  }
  if (!view.page) {
    return view.leader +
           " has published no status page in etcd (yet; an hvdrun older "
           "than this one never does)";
  }
  switch (view.page->kind) {
    case LeaderPage::Kind::kUrl:
      return "";
    case LeaderPage::Kind::kLoopbackOnly:
      return "the leader's status page listens on loopback only: " +
             view.page->url + " answers on " + view.page->host +
             " alone (start the leader with --status-bind 0.0.0.0[:PORT], "
             "or an address other machines reach, for its standbys to "
             "send readers there)";
    case LeaderPage::Kind::kOff:
      return view.leader + " runs without a status page (--status-bind none)";
  }
  return "";
}

json StandbyJson(const StandbyView& view, int64_t now_ms) {
  json page = nullptr;
  if (view.page) {
    page = {{"kind", PageKindName(view.page->kind)},
            {"url", view.page->url},
            {"host", view.page->host}};
  }
  const std::string why = NoRedirectReason(view);
  return json{{"job", {{"state", "standby"}, {"now_ms", now_ms}}},
              {"standby",
               {{"job_id", view.job_id},
                {"etcd", view.etcd},
                {"this_hvdrun", view.this_hvdrun},
                {"pid", view.pid},
                {"host", view.host},
                {"since_ms", view.since_ms},
                {"leader", view.leader.empty() ? json() : json(view.leader)},
                {"leader_since_ms",
                 view.leader.empty() ? json() : json(view.leader_since_ms)},
                {"leader_page", page},
                {"no_redirect", why.empty() ? json() : json(why)}}}};
}

std::string StandbyText(const json& standby, double now_ms) {
  if (!standby.is_object()) return "";
  std::string text =
      "answered by: standby " +
      StandbyString(standby.value("this_hvdrun", json())) + " for job '" +
      StandbyString(standby.value("job_id", json())) + "' in etcd at " +
      StandbyString(standby.value("etcd", json())) + ", standing by since " +
      StandbyAgo(standby.value("since_ms", json()), now_ms) + "\n";
  const json& leader = standby.value("leader", json());
  if (leader.is_string()) {
    text += "the job is led by " + leader.get<std::string>() + ", since " +
            StandbyAgo(standby.value("leader_since_ms", json()), now_ms);
    const json& page = standby.value("leader_page", json());
    if (page.is_object() && page.value("kind", "") == "url") {
      text += "; its status page: " + StandbyString(page.value("url", json()));
    }
    text += "\n";
  } else {
    text += "the job is led by no hvdrun at this moment\n";
  }
  const json& why = standby.value("no_redirect", json());
  if (why.is_string()) text += "not followed: " + why.get<std::string>() + "\n";
  return text;
}

std::string StandbyPageHtml(const StandbyView& view, int64_t now_ms) {
  const std::string text = StandbyText(StandbyJson(view, now_ms)["standby"],
                                       static_cast<double>(now_ms));
  return "<!doctype html>\n<html><head><meta charset=\"utf-8\">"
         "<meta http-equiv=\"refresh\" content=\"3\">"
         "<title>hvd standby: job " +
         HtmlEscaped(view.job_id) +
         "</title></head>\n<body style=\"font-family: sans-serif\">"
         "<h1>hvdrun standby for job " +
         HtmlEscaped(view.job_id) + "</h1>\n<pre>" + HtmlEscaped(text) +
         "</pre>\n<p>This page reloads every 3 s, and goes to the leader's "
         "page once it can.</p></body></html>\n";
}

std::string StandbyMetricsText(const StandbyView& view) {
  return "# HELP hvd_standby Whether this hvdrun stands by for a job that "
         "another hvdrun leads (1); its own metrics come once it leads.\n"
         "# TYPE hvd_standby gauge\nhvd_standby 1\n"
         "# HELP hvd_standby_leader_known Whether this standby sees an "
         "hvdrun lead the job.\n"
         "# TYPE hvd_standby_leader_known gauge\nhvd_standby_leader_known " +
         std::string(view.leader.empty() ? "0" : "1") + "\n";
}

}  // namespace hvd::launcher

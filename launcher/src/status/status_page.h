// The status page: one self-contained HTML document (inline style and
// script, no external assets) that fetches status.json with its own URL's
// token every second and renders it with DOM calls only (worker output is
// untrusted text: it is never parsed as HTML).
#pragma once

#include <string>

namespace hvd::launcher {

const std::string& StatusPageHtml();

}  // namespace hvd::launcher

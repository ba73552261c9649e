#include "aws/default_transport.h"

#include "aws/curl_transport.h"
#include "aws/socket_transport.h"

namespace dlq {

Result<std::unique_ptr<HttpTransport>> MakeDefaultTransport(const TransportSettings& settings) {
  if (settings.client == HttpClient::kBuiltin) {
    DLQ_ASSIGN_OR_RETURN(auto transport, SocketTransport::Create(settings));
    return std::unique_ptr<HttpTransport>(std::move(transport));
  }
  CurlTransportOptions o;
  o.connect_timeout = settings.connect_timeout;
  o.request_timeout = settings.request_timeout;
  o.ca_bundle = settings.ca_bundle;
  o.proxy_variable_http = settings.proxy_variable_http;
  o.proxy_variable_https = settings.proxy_variable_https;
  DLQ_ASSIGN_OR_RETURN(auto transport, CurlTransport::Create(o));
  return std::unique_ptr<HttpTransport>(std::move(transport));
}

}  // namespace dlq

package intake

import (
	"encoding/xml"
	"net/http"
)

// Salesforce outbound messaging retries for 24 hours until it receives this
// acknowledgement; anything else (including a SOAP fault) means "retry".
const soapAck = `<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/">
 <soapenv:Body>
  <notificationsResponse xmlns="http://soap.sforce.com/2005/09/outbound">
   <Ack>true</Ack>
  </notificationsResponse>
 </soapenv:Body>
</soapenv:Envelope>
`

// writeSOAP answers a Salesforce outbound message: the Ack for a stored or
// duplicate message, a SOAP fault otherwise (Client for what the sender got
// wrong, Server for what it should retry).
func writeSOAP(w http.ResponseWriter, status int, resp Response) {
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	if status < 300 {
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(soapAck))
		return
	}
	code := "soapenv:Client"
	if status >= 500 || status == http.StatusConflict {
		code = "soapenv:Server"
	}
	w.WriteHeader(status)
	w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/">
 <soapenv:Body>
  <soapenv:Fault>
   <faultcode>` + code + `</faultcode>
   <faultstring>`))
	xml.EscapeText(w, []byte(resp.Error))
	w.Write([]byte(`</faultstring>
  </soapenv:Fault>
 </soapenv:Body>
</soapenv:Envelope>
`))
}

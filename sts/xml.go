package sts

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"io"
	"net/http"
	"strconv"
	"strings"
)

const xmlns = "https://sts.amazonaws.com/doc/2011-06-15/"

type responseMetadata struct {
	RequestID string `xml:"RequestId"`
}

type credentials struct {
	AccessKeyID     string `xml:"AccessKeyId"`
	SecretAccessKey string `xml:"SecretAccessKey"`
	SessionToken    string `xml:"SessionToken"`
	Expiration      string `xml:"Expiration"`
}

type assumedRoleUser struct {
	AssumedRoleID string `xml:"AssumedRoleId"`
	Arn           string `xml:"Arn"`
}

type assumeRoleResult struct {
	Credentials     credentials     `xml:"Credentials"`
	AssumedRoleUser assumedRoleUser `xml:"AssumedRoleUser"`
}

type assumeRoleResponse struct {
	XMLName  xml.Name         `xml:"AssumeRoleResponse"`
	Xmlns    string           `xml:"xmlns,attr"`
	Result   assumeRoleResult `xml:"AssumeRoleResult"`
	Metadata responseMetadata `xml:"ResponseMetadata"`
}

type assumeRoleWithWebIdentityResult struct {
	Credentials                 credentials     `xml:"Credentials"`
	SubjectFromWebIdentityToken string          `xml:"SubjectFromWebIdentityToken"`
	AssumedRoleUser             assumedRoleUser `xml:"AssumedRoleUser"`
	Provider                    string          `xml:"Provider"`
	Audience                    string          `xml:"Audience"`
}

type assumeRoleWithWebIdentityResponse struct {
	XMLName  xml.Name                        `xml:"AssumeRoleWithWebIdentityResponse"`
	Xmlns    string                          `xml:"xmlns,attr"`
	Result   assumeRoleWithWebIdentityResult `xml:"AssumeRoleWithWebIdentityResult"`
	Metadata responseMetadata                `xml:"ResponseMetadata"`
}

type getSessionTokenResult struct {
	Credentials credentials `xml:"Credentials"`
}

type getSessionTokenResponse struct {
	XMLName  xml.Name              `xml:"GetSessionTokenResponse"`
	Xmlns    string                `xml:"xmlns,attr"`
	Result   getSessionTokenResult `xml:"GetSessionTokenResult"`
	Metadata responseMetadata      `xml:"ResponseMetadata"`
}

type getCallerIdentityResult struct {
	Arn     string `xml:"Arn"`
	UserID  string `xml:"UserId"`
	Account string `xml:"Account"`
}

type getCallerIdentityResponse struct {
	XMLName  xml.Name                `xml:"GetCallerIdentityResponse"`
	Xmlns    string                  `xml:"xmlns,attr"`
	Result   getCallerIdentityResult `xml:"GetCallerIdentityResult"`
	Metadata responseMetadata        `xml:"ResponseMetadata"`
}

type errorBody struct {
	Type    string `xml:"Type"`
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

type errorResponse struct {
	XMLName   xml.Name  `xml:"ErrorResponse"`
	Xmlns     string    `xml:"xmlns,attr"`
	Error     errorBody `xml:"Error"`
	RequestID string    `xml:"RequestId"`
}

func setRequestID(v any, id string) {
	switch r := v.(type) {
	case *assumeRoleResponse:
		r.Metadata.RequestID = id
	case *getCallerIdentityResponse:
		r.Metadata.RequestID = id
	case *assumeRoleWithWebIdentityResponse:
		r.Metadata.RequestID = id
	case *getSessionTokenResponse:
		r.Metadata.RequestID = id
	}
}

func requestID() string {
	var b [16]byte
	rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return strings.Join([]string{h[:8], h[8:12], h[12:16], h[16:20], h[20:]}, "-")
}

func writeXML(w http.ResponseWriter, status int, v any) {
	b, _ := xml.Marshal(v)
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("Content-Length", strconv.Itoa(len(xml.Header)+len(b)))
	w.WriteHeader(status)
	io.WriteString(w, xml.Header)
	w.Write(b)
}
